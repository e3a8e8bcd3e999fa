package simulation

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/signing"
)

// TestFloorMeter: the floor is the wall time per signature and
// verification; a key the venue would not accept fails the measure (a
// floor of signatures that do not verify measures nothing real), and
// figures divide the wall per request by the floor.
func TestFloorMeter(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	key, err := signing.ParsePrivateKey("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New("sim-key", key)
	if err != nil {
		t.Fatal(err)
	}
	m := &floorMeter{signer: signer, apiKey: "sim-key", pub: key.Public(), wall: clockwork.NewRealClock()}
	if m.perRequest() != 0 {
		t.Fatal("a floor before any measure is not 0")
	}
	if err := m.measure(4); err != nil || m.n != 4 || m.perRequest() <= 0 {
		t.Fatalf("measure: %v, %d samples, %v a request", err, m.n, m.perRequest())
	}
	seed[0] = 1
	other := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	for _, bad := range []*floorMeter{
		{signer: signer, apiKey: "sim-key", pub: other, wall: m.wall},
		{signer: signer, apiKey: "another key", pub: key.Public(), wall: m.wall},
	} {
		if err := bad.measure(1); err == nil {
			t.Error("a signature the venue would refuse was measured as the floor")
		}
	}

	r := &Run{Events: make([]Event, 4)}
	f := figures(r, time.Hour, 400*time.Microsecond, 50*time.Microsecond, 0)
	if f.PerRequest != 100*time.Microsecond || f.FloorRatio != 2 {
		t.Errorf("figures: %v a request, %v x the floor; want 100µs, 2", f.PerRequest, f.FloorRatio)
	}
	if f := figures(r, time.Hour, 400*time.Microsecond, 0, 0); f.FloorRatio != 0 {
		t.Errorf("figures with no floor: %v x, want 0", f.FloorRatio)
	}
}
