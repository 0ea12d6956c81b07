// Command pause is the test node's sandbox image: it holds a Pod's
// namespaces and does nothing until it is told to stop, as the pause
// container of a cluster does. The node builds it (static, FROM scratch),
// because no image can be pulled from outside this machine.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	s := make(chan os.Signal, 1)
	signal.Notify(s, syscall.SIGINT, syscall.SIGTERM)
	<-s
}
