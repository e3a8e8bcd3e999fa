package simulation

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/venue"
)

// TestFloorMeter: the floor is the wall time per signature and
// verification; a key the venue would not accept fails the measure, and
// a sample taken during a run with it fails the run's top-up (a floor of
// signatures that do not verify measures nothing real); and figures
// divide the wall per request by the floor.
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
	wall := clockwork.NewRealClock()
	m := newFloorMeter(signer, "sim-key", key.Public(), wall, 0)
	if m.perRequest() != 0 {
		t.Fatal("a floor before any measure is not 0")
	}
	if err := m.measure(4); err != nil || m.n != 4 || m.perRequest() <= 0 {
		t.Fatalf("measure: %v, %d samples, %v a request", err, m.n, m.perRequest())
	}
	m.idle()
	if m.n != 5 || m.inRun != 1 || m.inRunTook <= 0 {
		t.Fatalf("idle: %d samples, %d in the run taking %v; want 5, 1 and some time", m.n, m.inRun, m.inRunTook)
	}
	if err := m.topUp(); err != nil || m.n != floorMinSamples || m.inRun != 1 {
		t.Fatalf("top-up: %v, %d samples (%d in the run); want %d (1)", err, m.n, m.inRun, floorMinSamples)
	}
	// calibrate sets the interval to floorDuty samples' worth of wall, and
	// its samples are not in the floor: on a wall clock that moves 1 ms a
	// reading, 16 samples are 17 ms from the first reading to the last.
	slow := newFloorMeter(signer, "sim-key", key.Public(), tickingClock{clockwork.NewFakeClock(), time.Millisecond}, 0)
	if err := slow.calibrate(); err != nil || slow.n != 0 || slow.every != floorDuty*17*time.Millisecond/floorCalibration {
		t.Errorf("calibrate: %v, %d samples in the floor, every %v; want none and %v", err, slow.n, slow.every, floorDuty*17*time.Millisecond/floorCalibration)
	}
	fast := newFloorMeter(signer, "sim-key", key.Public(), tickingClock{clockwork.NewFakeClock(), time.Microsecond}, 0)
	if err := fast.calibrate(); err != nil || fast.every != floorMinEvery {
		t.Errorf("calibrate on a fast machine: %v, every %v; want %v", err, fast.every, floorMinEvery)
	}
	seed[0] = 1
	other := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	for _, bad := range []*floorMeter{
		newFloorMeter(signer, "sim-key", other, wall, 0),
		newFloorMeter(signer, "another key", key.Public(), wall, 0),
	} {
		if err := bad.measure(1); err == nil {
			t.Error("a signature the venue would refuse was measured as the floor")
		}
		if err := bad.calibrate(); err == nil {
			t.Error("a signature the venue would refuse calibrated the floor")
		}
		bad.idle()
		if err := bad.topUp(); err == nil || bad.n != 0 {
			t.Errorf("a signature the venue would refuse was sampled during the run: %v, %d samples", err, bad.n)
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

// tickingClock is a wall clock that moves tick on every reading: the
// wall a run measures is then how many readings it made, the same from
// one run to the next.
type tickingClock struct {
	*clockwork.FakeClock
	tick time.Duration
}

func (c tickingClock) Now() time.Time {
	c.Advance(c.tick)
	return c.FakeClock.Now()
}

func (c tickingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// TestFloorSampledDuringRun: a run samples its floor between its bots'
// steps and takes that time out of its wall, without changing its
// history. The same saturated run, on a wall clock that moves 1 µs a
// reading, once with no sample in the run and once with one at every
// turn of the driver: the second takes hundreds of samples in the run, yet
// its venue saw the same requests and its wall is the same to the
// microsecond (each sample's readings are subtracted; without that its
// wall would be a microsecond a sample longer).
func TestFloorSampledDuringRun(t *testing.T) {
	t.Parallel()
	runWith := func(every time.Duration) *Run {
		t.Helper()
		return run(t, Scenario{Name: "floor", Seed: 3, Mix: venue.Mix{Rate429: 0.05, Rate5xx: 0.05},
			Duration: time.Minute, wall: tickingClock{clockwork.NewFakeClock(), time.Microsecond}, floorEvery: every})
	}
	none, each := runWith(time.Hour), runWith(time.Nanosecond)
	fn, fe := none.Figures, each.Figures
	if fn.FloorInRun != 0 || fn.FloorSamples != floorMinSamples {
		t.Errorf("no sampling in the run: %d samples in it, %d in all; want 0, %d", fn.FloorInRun, fn.FloorSamples, floorMinSamples)
	}
	if fe.FloorInRun < floorMinSamples || fe.FloorSamples != fe.FloorInRun {
		t.Errorf("sampling at every turn: %d samples in the run, %d in all; want the same, at least %d", fe.FloorInRun, fe.FloorSamples, floorMinSamples)
	}
	if fn.Requests != fe.Requests || fn.Events != fe.Events || fn.Calls != fe.Calls || fn.Simulated != fe.Simulated {
		t.Errorf("sampling changed the run: %d requests, %d events, %d calls, %v simulated; with it %d, %d, %d, %v",
			fn.Requests, fn.Events, fn.Calls, fn.Simulated, fe.Requests, fe.Events, fe.Calls, fe.Simulated)
	}
	for i := range min(len(none.Events), len(each.Events)) {
		if a, b := none.Events[i], each.Events[i]; a.Method != b.Method || a.Target != b.Target || a.Status != b.Status || !a.Time.Equal(b.Time) || a.Signature != b.Signature {
			t.Fatalf("request %d differs with sampling: %s %s %d at %v, then %s %s %d at %v", i, a.Method, a.Target, a.Status, a.Time, b.Method, b.Target, b.Status, b.Time)
		}
	}
	if fn.Wall <= 0 || fe.Wall != fn.Wall {
		t.Errorf("wall with %d samples in the run %v, without %v: want the same (the sampling subtracted)", fe.FloorInRun, fe.Wall, fn.Wall)
	}
}
