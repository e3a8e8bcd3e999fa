package orders_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/transport"
)

// steppedClock is a machine's clock whose wall time can be stepped (as
// NTP, a VM resume or a migration does). Its times carry the step in both
// their wall and monotonic readings, so this is the harder case: nothing
// read from it, not even an elapsed time, is immune to the step.
type steppedClock struct {
	clockwork.Clock
	step atomic.Int64
}

func (c *steppedClock) Now() time.Time                  { return c.Clock.Now().Add(time.Duration(c.step.Load())) }
func (c *steppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *steppedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// TestClockStepsDoNotShortenTheWait: the machine's clock is off by some
// seconds and stepped right (either way) just after a create leaves; the
// create is held in the network and delivered 29 s after it was signed,
// inside its signature's window. Or the clock stays, and the venue's Date
// headers jump after the create. Whatever the step, the Placer waits until
// no signature can land before it sends again: one order, and a true
// answer; the order itself for a step of 25 s. (A step of 40 s takes the
// transport's signatures out of the venue's window until its offset
// estimate follows the step, so its reads are refused for a while and the
// answer may be unknown: true, and still one order.)
func TestClockStepsDoNotShortenTheWait(t *testing.T) {
	for _, tc := range []struct {
		name       string
		off        time.Duration // how far the machine's clock is off at first
		dateJump   time.Duration // what the venue's Date headers gain after the create
		deliveryIn time.Duration
		placed     bool // the answer must be the order
	}{
		{"25s fast, stepped back", 25 * time.Second, 0, 29 * time.Second, true},
		{"25s slow, stepped forward", -25 * time.Second, 0, 29 * time.Second, true},
		{"40s fast, stepped back", 40 * time.Second, 0, 29 * time.Second, false},
		{"40s slow, stepped forward", -40 * time.Second, 0, 29 * time.Second, false},
		{"Date jumps 30s ahead", 0, 30 * time.Second, 29 * time.Second, true},
		{"Date jumps 30s back", 0, -30 * time.Second, 29 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := &steppedClock{Clock: clockwork.NewRealClock()}
				clk.step.Store(int64(tc.off))
				var holding, jumped atomic.Bool
				step := func(next http.RoundTripper) http.RoundTripper {
					return rtFunc(func(r *http.Request) (*http.Response, error) {
						if !isCreate(r) || !holding.Load() {
							resp, err := next.RoundTrip(r)
							if err == nil && jumped.Load() {
								if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
									resp.Header.Set("Date", d.Add(tc.dateJump).Format(http.TimeFormat))
								}
							}
							return resp, err
						}
						body, err := io.ReadAll(r.Body)
						if err != nil {
							return nil, err
						}
						late := r.Clone(context.WithoutCancel(r.Context()))
						late.Body = io.NopCloser(bytes.NewReader(body))
						go func() {
							time.Sleep(tc.deliveryIn)
							if resp, err := next.RoundTrip(late); err == nil {
								resp.Body.Close()
							}
						}()
						holding.Store(false)
						clk.step.Store(0) // the machine's clock is set right
						jumped.Store(tc.dateJump != 0)
						return nil, errors.New("connection reset by peer")
					})
				}
				e := newEnvWith(t, envConfig{store: boltStore(t), wrap: step,
					transport: transport.Config{Clock: clk}})
				ctx := context.Background()
				for _, k := range []string{"warm-up-1", "warm-up-2", "warm-up-3"} { // the offset measured
					if _, err := e.placer.Place(ctx, k, limitBuy("0.001")); err != nil {
						t.Fatal(err)
					}
				}
				holding.Store(true)
				cid := e.placer.ClientOrderID("k")
				o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
				time.Sleep(tc.deliveryIn) // on the bubble's clock: the held create has landed
				e.checkTruth(t, cid, o, err)
				if err != nil && tc.placed {
					t.Fatalf("Place = %v; the order landed and a later read should find it", err)
				}
				// Placed again once the clocks have settled, the key is its one order.
				time.Sleep(2 * time.Minute)
				o, err = e.placer.Place(ctx, "k", limitBuy("0.001"))
				e.checkTruth(t, cid, o, err)
				if n := len(e.srv.Ledger().OrdersByClientID(cid)); n != 1 || err != nil {
					t.Fatalf("Place again = %v; the venue holds %d orders for the key, want the one delivered late", err, n)
				}
			})
		})
	}
}
