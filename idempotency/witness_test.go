package idempotency

import (
	"context"
	"path/filepath"
	"testing"
)

func TestWitness(t *testing.T) {
	bolt, err := Open(filepath.Join(t.TempDir(), "intents.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	type wrapped struct{ Store }
	for _, tc := range []struct {
		name    string
		store   Store
		witness bool // implements Witness
		want    bool
	}{
		{"Open's store vouches", bolt, true, true},
		{"NewMemoryStore's does not", NewMemoryStore(), true, false},
		{"a Store without VouchesNew does not", wrapped{NewMemoryStore()}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := tc.store.(Witness)
			if ok != tc.witness {
				t.Fatalf("implements Witness = %v, want %v", ok, tc.witness)
			}
			if got := ok && w.VouchesNew(); got != tc.want {
				t.Fatalf("vouches = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAnswered2xxRoundTrips: the mark that a 2xx answered a create
// survives the durable store.
func TestAnswered2xxRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "intents.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := Record{ClientOrderID: "c1", State: Unknown, Sends: 1, Answered2xx: true}
	if _, _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "c1")
	if err != nil || !got.Answered2xx || got.State != Unknown {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}
