package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "tradewire (no build information)"},
		{"a tagged install", &debug.BuildInfo{GoVersion: "go1.24.1", Main: debug.Module{Version: "v0.3.0"}},
			"tradewire v0.3.0, go1.24.1"},
		{"a build from a clean checkout", &debug.BuildInfo{GoVersion: "go1.24.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "7f90be7c0ffee"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, "tradewire (devel), revision 7f90be7c0ffee, committed 2026-12-01T10:00:00Z, go1.24.1"},
		{"a build from a modified checkout", &debug.BuildInfo{Main: debug.Module{}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "7f90be7"}, {Key: "vcs.modified", Value: "true"},
		}}, "tradewire (devel), revision 7f90be7+dirty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := version(tt.bi); got != tt.want {
				t.Errorf("version = %q, want %q", got, tt.want)
			}
		})
	}
}

// --version prints the build's version line and exits 0, sending nothing.
func TestVersion_Flag(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "", "--version")
	if r.code != 0 || r.stderr != "" || r.stdout != buildVersion()+"\n" || !strings.HasPrefix(r.stdout, "tradewire ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and %q", r.code, r.stdout, r.stderr, buildVersion())
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		shell, marker string
	}{
		{"bash", "__start_tradewire"},
		{"zsh", "#compdef tradewire"},
		{"fish", "complete -c tradewire"},
	} {
		t.Run(tt.shell, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, "", "completion", tt.shell)
			if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, tt.marker) {
				t.Errorf("completion %s: exit %d, stderr %q, %d bytes without %q", tt.shell, r.code, r.stderr, len(r.stdout), tt.marker)
			}
		})
	}
	for _, args := range [][]string{{"completion"}, {"completion", "powershell"}, {"completion", "bash", "zsh"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, "", args...)
			if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line", r.code, r.stdout, r.stderr)
			}
		})
	}
	// The scripts ask the binary for candidates through cobra's hidden
	// __complete command.
	r := runCLI(t, nil, "", "__complete", "acc")
	if r.code != 0 || !strings.Contains(r.stdout, "account") {
		t.Errorf("__complete acc: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
