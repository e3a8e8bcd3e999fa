package brokertest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineImportsNoClientPackage keeps the simulated venue an
// independent oracle: a bug shared with the client cannot pass on both
// sides if brokertest imports none of the client's packages (signing,
// transport, orders, idempotency, broker), directly or through another.
// Its tests may; its code may not.
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
	const self = "broker/brokertest"
	forbidden := []string{"signing", "transport", "orders", "idempotency", "broker"}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != module+self {
		t.Fatalf("go list -deps listed %q, want brokertest's dependencies ending with itself", deps)
	}
	for _, dep := range deps {
		rel, ok := strings.CutPrefix(dep, module)
		if !ok || rel == self {
			continue
		}
		for _, f := range forbidden {
			if rel == f || strings.HasPrefix(rel, f+"/") {
				t.Errorf("brokertest depends on %s; the simulated venue must not share code with the client", dep)
			}
		}
	}
}
