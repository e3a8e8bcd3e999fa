package venue

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tradewire/tradewire"

// goList runs go list from the module's root with args and returns its
// output's fields.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Fields(strings.Join(goListLines(t, args...), "\n"))
}

// goListLines runs go list from the module's root with args and returns
// its output's lines.
func goListLines(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: the venue's independence cannot be checked")
	}
	cmd := exec.Command(goTool, append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// sharedServer is the one package outside venue/ the venue may use: its
// HTTP/2 front, a frame-level server that knows nothing of the venue or
// the client, shared with transport's tests (which play the same stream
// faults on handlers of their own). The test checks it stays a leaf. Once
// those tests use the venue instead, it moves to venue/internal/h2front
// and this exception goes.
const sharedServer = "internal/h2front"

// TestVenueImportsNothingOfTradewire keeps the simulated venue an
// independent oracle: a bug shared with the client cannot pass on both
// sides if the venue, its tests included, depends on no tradewire package
// outside venue/ (no signing, transport, orders, broker, internal/wire),
// directly or through another; sharedServer alone is allowed, and only
// while it imports no tradewire package itself.
func TestVenueImportsNothingOfTradewire(t *testing.T) {
	for _, dep := range goList(t, "-deps", "-f", "{{.ImportPath}}", "./"+sharedServer) {
		if rel, ok := strings.CutPrefix(dep, module+"/"); ok && rel != sharedServer {
			t.Errorf("%s depends on %s: the venue's HTTP/2 front must import no tradewire package", sharedServer, dep)
		}
	}
	for _, args := range [][]string{
		{"-deps", "./venue/..."},
		{"-deps", "-test", "./venue/..."},
	} {
		deps := goList(t, append([]string{"-f", "{{.ImportPath}}"}, args...)...)
		if !slices.Contains(deps, module+"/venue") {
			t.Fatalf("go list %v listed %q, want the venue among them", args, deps)
		}
		for _, dep := range deps {
			// -test adds "pkg [pkg.test]" variants, "pkg.test" mains and
			// "pkg_test" external test packages.
			p := strings.TrimSuffix(strings.TrimSuffix(dep, ".test"), "_test")
			rel, ok := strings.CutPrefix(p, module+"/")
			if !ok || rel == "venue" || strings.HasPrefix(rel, "venue/") || rel == sharedServer {
				continue
			}
			if strings.HasPrefix(dep, "[") { // the bracketed half of "pkg [pkg.test]"
				continue
			}
			t.Errorf("go list %v: the venue depends on %s; it must share no code with the client", args, dep)
		}
	}
}

// TestInternalHoldsLeavesOnly: no package under the module's top-level
// internal/ imports broker, orders or transport (its tests may), so that
// imports point down only: internal/ holds leaves the library builds on,
// not harnesses built on the library.
func TestInternalHoldsLeavesOnly(t *testing.T) {
	forbidden := []string{"broker", "orders", "transport"}
	// One package per line: its path, then its imports.
	out := goListLines(t, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./internal/...")
	for _, line := range out {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module+"/")
		for _, imp := range f[1:] {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			for _, bad := range forbidden {
				if rel != bad && !strings.HasPrefix(rel, bad+"/") {
					continue
				}
				t.Errorf("%s imports %s: a package under internal/ must not import broker, orders or transport", pkg, imp)
			}
		}
	}
}
