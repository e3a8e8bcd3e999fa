package venue

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineImportsNoClientPackage keeps the venue an independent oracle:
// a bug shared with the client cannot pass on both sides if the venue
// imports none of the client's packages, directly or through another.
func TestEngineImportsNoClientPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/tradewire/tradewire/"
	forbidden := []string{"signing", "transport", "orders", "idempotency", "broker"}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		rel, ok := strings.CutPrefix(dep, module)
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rel == f || strings.HasPrefix(rel, f+"/") {
				t.Errorf("internal/venue depends on %s; the venue must not share code with the client", dep)
			}
		}
	}
}
