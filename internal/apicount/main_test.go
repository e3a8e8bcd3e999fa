package main

import (
	"slices"
	"testing"
)

func TestCount(t *testing.T) {
	counts, names, err := count("testdata/tree")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"T", "G", "T.M", "G.M", "F", "V", "C"}
	got := names["pkg"]
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
	if len(counts) != 1 || counts["pkg"] != len(want) {
		t.Errorf("counts = %v, want only pkg: %d (internal/, cmd/ and tests are not counted)", counts, len(want))
	}
}
