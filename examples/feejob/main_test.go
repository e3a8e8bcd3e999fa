package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "fees: ") || strings.HasPrefix(lines[0], "fees: 0 ") {
		t.Fatalf("no fees summed:\n%s", out.String())
	}
	if len(lines) < 2 {
		t.Fatalf("no symbol lines:\n%s", out.String())
	}
}
