package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// goldenRuns are read commands whose output, against the simulated venue
// at simNow, is kept byte for byte in testdata/golden: the JSON and CSV
// field names and exact values a script reads, and the table a person
// reads.
var goldenRuns = []struct {
	name string
	args []string
}{
	{"account.json", []string{"account", "-o", "json"}},
	{"account.table", []string{"account", "-o", "table"}},
	{"holdings.json", []string{"holdings", "-o", "json"}},
	{"pairs.json", []string{"pairs", "-o", "json"}},
	{"pairs.table", []string{"pairs", "-o", "table"}},
	{"quote.json", []string{"quote", "BTC-USD", "ETH-USD", "-o", "json"}},
	{"quote.table", []string{"quote", "BTC-USD", "ETH-USD", "-o", "table"}},
	{"estimate.json", []string{"estimate", "BTC-USD", "--quantity", "0.1,1", "-o", "json"}},
	{"estimate.csv", []string{"estimate", "BTC-USD", "--quantity", "0.1,1", "-o", "csv"}},
	{"estimate.table", []string{"estimate", "BTC-USD", "--quantity", "0.1,1", "-o", "table"}},
	{"orders.json", []string{"orders", "-o", "json"}},
	{"orders.csv", []string{"orders", "-o", "csv"}},
	{"orders.table", []string{"orders", "-o", "table"}},
	{"order-get.json", []string{"order", "get", "sim-order-placeholder", "-o", "json"}},
	{"fees.json", []string{"fees", "-o", "json"}},
	{"fees.csv", []string{"fees", "-o", "csv"}},
	{"fees.table", []string{"fees", "-o", "table"}},
	{"preview.json", []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quantity", "0.001", "--limit-price", "50000", "-o", "json"}},
	{"preview.table", []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quantity", "0.001", "--limit-price", "50000", "-o", "table"}},
}

// TestOutput_Golden compares each read command's output, on a fake clock
// at simNow, with its golden file; go test -run TestOutput_Golden -update
// rewrites them.
func TestOutput_Golden(t *testing.T) {
	t.Parallel()
	checkGolden(t, runSim, *updateGolden)
}

// checkGolden runs every goldenRuns command with run and compares its
// stdout with the golden file, or rewrites the file when update is set.
func checkGolden(t *testing.T, run func(t *testing.T, args ...string) result, update bool) {
	t.Helper()
	id := firstOrderID(t)
	for _, g := range goldenRuns {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string(nil), g.args...)
			for i := range args {
				args[i] = strings.ReplaceAll(args[i], "sim-order-placeholder", id)
			}
			r := run(t, args...)
			ok(t, r)
			path := filepath.Join("testdata", "golden", g.name)
			if update {
				if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.stdout != string(want) {
				t.Errorf("tradewire --sim %s differs from %s:\n%s", strings.Join(args, " "), path, r.stdout)
			}
		})
	}
}

// firstOrderID is the id of the newest order of the simulated history.
func firstOrderID(t *testing.T) string {
	t.Helper()
	r := runSim(t, "orders", "-o", "json")
	ok(t, r)
	var items []map[string]any
	decodeJSON(t, r.stdout, &items)
	if len(items) == 0 {
		t.Fatal("no orders in the simulated history")
	}
	return items[0]["id"].(string)
}
