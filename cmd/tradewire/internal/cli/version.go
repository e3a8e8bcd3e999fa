package cli

import (
	"runtime/debug"
	"strings"
)

// version describes the build for --version: the module's version (a
// tag for go install …@vX, "(devel)" for a build from a checkout), the
// VCS revision it was built from, with "+dirty" when the work tree had
// changes, the commit time and the Go release. Fields the build did not
// record are left out; bi nil (no build information) says so.
func version(bi *debug.BuildInfo) string {
	if bi == nil {
		return "tradewire (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	parts := []string{"tradewire " + v}
	if rev != "" {
		parts = append(parts, "revision "+rev+dirty)
	}
	if at != "" {
		parts = append(parts, "committed "+at)
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return strings.Join(parts, ", ")
}

// buildVersion is version for this binary's build information.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return version(bi)
}
