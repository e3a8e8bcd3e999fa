package claim

import (
	"errors"
	"slices"
	"testing"
)

// TestEndedKeepsWhatItCouldNotRelease: Release hands each ended holder of
// the intent to release once, stops at the first failure, and keeps that
// holder and the rest for the next call; other intents are untouched.
func TestEndedKeepsWhatItCouldNotRelease(t *testing.T) {
	var e Ended
	e.Add("c1", "a")
	e.Add("c1", "b")
	e.Add("c2", "z")
	var got []string
	fail := errors.New("down")
	if err := e.Release("c1", func(h string) error {
		got = append(got, h)
		if h == "b" {
			return fail
		}
		return nil
	}); err != fail {
		t.Fatalf("Release = %v; want the failure", err)
	}
	got = nil
	if err := e.Release("c1", func(h string) error { got = append(got, h); return nil }); err != nil || !slices.Equal(got, []string{"b"}) {
		t.Fatalf("second Release saw %v, %v; want [b]", got, err)
	}
	got = nil
	e.Release("c1", func(h string) error { got = append(got, h); return nil })
	if len(got) != 0 {
		t.Fatalf("a third Release saw %v; want nothing left", got)
	}
	e.Release("c2", func(h string) error { got = append(got, h); return nil })
	if !slices.Equal(got, []string{"z"}) {
		t.Fatalf("c2's holders %v; want [z]", got)
	}
}
