// Package version reports the build of Scion.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version, set at link time with
// -ldflags "-X github.com/scion-dev/scion/internal/version.Version=v0.1.0".
var Version = "dev"

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the version of the running binary, with the VCS commit when
// the build recorded one.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String renders the version on one line.
func (i Info) String() string {
	s := fmt.Sprintf("scion %s (%s, %s)", i.Version, i.GoVersion, i.Platform)
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "-dirty"
		}
		s = fmt.Sprintf("scion %s commit %s (%s, %s)", i.Version, c, i.GoVersion, i.Platform)
	}
	return s
}
