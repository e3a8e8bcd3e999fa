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

// TestVenueImportsNothingOfTradewire keeps the simulated venue an
// independent oracle: a bug shared with the client cannot pass on both
// sides if the venue, its tests and its HTTP/2 front (venue/internal/...)
// included, depends on no tradewire package outside venue/ (no signing,
// transport, orders, broker, internal/...), directly or through another.
func TestVenueImportsNothingOfTradewire(t *testing.T) {
	for _, args := range [][]string{
		{"-deps", "./venue/..."},
		{"-deps", "-test", "./venue/..."},
	} {
		deps := goList(t, append([]string{"-f", "{{.ImportPath}}"}, args...)...)
		for _, want := range []string{module + "/venue", module + "/venue/internal/h2front"} {
			if !slices.Contains(deps, want) {
				t.Fatalf("go list %v listed %q, want %s among them", args, deps, want)
			}
		}
		for _, dep := range deps {
			// -test adds "pkg [pkg.test]" variants, "pkg.test" mains and
			// "pkg_test" external test packages.
			p := strings.TrimSuffix(strings.TrimSuffix(dep, ".test"), "_test")
			rel, ok := strings.CutPrefix(p, module+"/")
			if !ok || rel == "venue" || strings.HasPrefix(rel, "venue/") {
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
