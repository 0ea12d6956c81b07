// Package cpustat reads the processor time of a test process, of the git
// subprocesses it ran and of the control plane it started, so benchmarks
// can say where the time of a saturated machine went.
package cpustat

import (
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU is the processor time used so far by this process, by its reaped
// children (the git subprocesses) and by the control plane's processes,
// and the time the machine's virtual processors waited for the host
// (steal): on a shared host, what the same work takes varies with it.
// GC and GCIdle are the Go runtime's estimate of how much of Self its
// garbage collector took, and of that how much marked on processors this
// process had nothing else to run on (idle-priority marking). The
// estimate is the wall time its workers held a processor (P), not CPU
// time: on a machine whose cores other processes keep busy it overstates
// (a worker waiting for a core counts), most of all the idle marking; a
// CPU profile gives the real share.
type CPU struct {
	Self, Children, APIServer, Etcd, Steal time.Duration
	// Registry is the OCI registry's (docker-registry) the test started.
	Registry time.Duration
	// ScionAPI is Scion's API server's, when it runs in a process of its
	// own (testenv.Options.APIServerBinary: the process "scion").
	ScionAPI   time.Duration
	GC, GCIdle time.Duration
}

// Sub returns the CPU time used between o and c.
func (c CPU) Sub(o CPU) CPU {
	return CPU{Self: c.Self - o.Self, Children: c.Children - o.Children, APIServer: c.APIServer - o.APIServer, Etcd: c.Etcd - o.Etcd, Steal: c.Steal - o.Steal, Registry: c.Registry - o.Registry,
		ScionAPI: c.ScionAPI - o.ScionAPI, GC: c.GC - o.GC, GCIdle: c.GCIdle - o.GCIdle}
}

// Read samples the processor time of this process, of its finished
// children and of the running kube-apiserver, etcd and OCI registry it
// started, and of Scion's API server when it runs as a process of its
// own.
func Read() CPU {
	var c CPU
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.Self = rusageTime(ru)
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		c.Children = rusageTime(ru)
	}
	c.Steal = steal()
	c.GC, c.GCIdle = gc()
	self := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15)
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		comm, fields := s[open+1:end], strings.Fields(s[end+1:])
		if len(fields) < 13 || fields[1] != self {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		d := time.Duration(utime+stime) * time.Second / 100 // USER_HZ
		switch {
		case strings.HasPrefix(comm, "kube-apiserver"):
			c.APIServer += d
		case strings.HasPrefix(comm, "etcd"):
			c.Etcd += d
		case strings.HasPrefix(comm, "docker-registry"):
			c.Registry += d
		case comm == "scion":
			c.ScionAPI += d
		}
	}
	return c
}

func rusageTime(ru syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// steal reads the steal time of all processors from /proc/stat (the
// eighth value of its "cpu" line, in USER_HZ).
func steal() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0
	}
	n, _ := strconv.ParseInt(fields[8], 10, 64)
	return time.Duration(n) * time.Second / 100
}

// gc reads the runtime's estimate of the CPU its garbage collector used,
// in all and marking on idle processors.
func gc() (total, idle time.Duration) {
	samples := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}}
	metrics.Read(samples)
	seconds := func(s metrics.Sample) time.Duration {
		if s.Value.Kind() != metrics.KindFloat64 {
			return 0
		}
		return time.Duration(s.Value.Float64() * float64(time.Second))
	}
	return seconds(samples[0]), seconds(samples[1])
}
