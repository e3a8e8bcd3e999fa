package idempotency_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	simvenue "github.com/tradewire/tradewire/venue"
)

// The store's cost against what is open (issue: "a store whose cost
// follows what is open"). Each benchmark reports its figure as a ratio
// against a floor measured in the same run:
//
//	go test -run XXX -bench 'Day|Recover' -benchtime 1x ./idempotency/

// venue is a simulated venue with a client on it, placing through a store
// that vouches (so a Place sends at once, with no lookup first).
type venue struct {
	srv   *brokertest.Server
	store idempotency.Store
	c     *broker.Client // places through store: the orders exist
}

func newVenue(b *testing.B) *venue {
	b.Helper()
	srv, err := brokertest.New(simvenue.Config{RateLimits: simvenue.RateLimits{Account: simvenue.RateLimit{PerMinute: math.Inf(1)}}, Faults: simvenue.FaultPlan{Duplicate: simvenue.CreateSecond}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	store := vouching{idempotency.NewMemoryStore()}
	return &venue{srv: srv, store: store, c: client(b, srv, store)}
}

// client is a broker.Client on srv recording intents in store.
func client(b *testing.B, srv *brokertest.Server, store idempotency.Store) *broker.Client {
	b.Helper()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		b.Fatal(err)
	}
	c, err := broker.New(broker.Config{
		APIKey:        srv.APIKey,
		PrivateKey:    key,
		BaseURL:       srv.URL,
		AccountNumber: srv.AccountNumber,
		IntentStore:   store,
		Transport:     transport.Config{RoundTripper: srv.Client().Transport, RatePerMinute: -1},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// vouching is a memory store that vouches for newness, as the bolt file
// does: Place sends a new intent without looking it up first.
type vouching struct{ idempotency.Store }

func (vouching) VouchesNew() bool { return true }

var limitBuy = broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
	AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: decimal.RequireFromString("1000.00")}

// place places n orders with keys prefix-0… and returns their intents as
// the store recorded them, whole (body and order JSON included).
func (v *venue) place(b *testing.B, prefix string, n int) []idempotency.Record {
	b.Helper()
	ctx := context.Background()
	var recs []idempotency.Record
	for i := range n {
		key := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := v.c.Place(ctx, key, limitBuy); err != nil {
			b.Fatal(err)
		}
		rec, err := v.store.Get(ctx, v.c.ClientOrderID(key))
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// writeDay writes a day of history to the bolt file at path as the
// Placer writes it: one order every 5 s, each recorded, signed and
// acknowledged (three commits), modelled on sample. It returns the
// store, open, with fsync off while it wrote.
func writeDay(b *testing.B, path string, sample idempotency.Record) idempotency.Store {
	b.Helper()
	return writeDays(b, path, sample, 1)
}

// writeDays is writeDay for days days in a row.
func writeDays(b *testing.B, path string, sample idempotency.Record, days int) idempotency.Store {
	b.Helper()
	ctx := context.Background()
	s, err := idempotency.Open(path, idempotency.Config{})
	if err != nil {
		b.Fatal(err)
	}
	idempotency.SetSync(s, false)
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for i := range days * dayOrders {
		at := t0.Add(time.Duration(i) * 5 * time.Second)
		key := fmt.Sprintf("job-%d", i)
		rec := sample
		rec.Key, rec.ClientOrderID = key, idempotency.ClientOrderID(sample.AccountNumber, "", key)
		rec.State, rec.Sends, rec.OrderID, rec.Order, rec.Reason = idempotency.Pending, 0, "", nil, ""
		rec.CreatedAt, rec.UpdatedAt, rec.FirstSentAt, rec.LastSignedAt = at, at, time.Time{}, time.Time{}
		rec.Holder = "h"
		if _, _, err := s.Create(ctx, rec); err != nil {
			b.Fatal(err)
		}
		signedAt := at.Add(10 * time.Millisecond)
		rec.FirstSentAt, rec.LastSignedAt, rec.UpdatedAt, rec.Sends = signedAt, signedAt, signedAt, 1
		if err := s.Update(ctx, rec); err != nil {
			b.Fatal(err)
		}
		rec.State, rec.OrderID, rec.Order, rec.UpdatedAt = idempotency.Acknowledged, sample.OrderID, sample.Order, at.Add(200*time.Millisecond)
		if err := s.Update(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	idempotency.SetSync(s, true)
	return s
}

// dayOrders is 24 h at one order every 5 s.
const dayOrders = 24 * 60 * 60 / 5

// BenchmarkLimitReadsAfterAWeek: what broker's account-wide limits read
// of a bolt store holding a week of history (one order every 5 s, all
// settled, within the default retention), at its end: every intent the
// limits count, as List reads them, against ListRecent's read for
// MaxDailyNotional (the last day) and for MaxOpenOrders alone (the last
// minute), which read the times of the older intents without decoding
// them. Reported as each read's time and as ratios to List's.
//
//	go test -run '^$' -bench LimitReadsAfterAWeek -benchtime 1x ./idempotency/
func BenchmarkLimitReadsAfterAWeek(b *testing.B) {
	v := newVenue(b)
	sample := v.place(b, "sample", 1)[0]
	s := writeDays(b, filepath.Join(b.TempDir(), "intents.db"), sample, 7)
	defer s.Close()
	end := time.Date(2026, 11, 9, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	states := []idempotency.State{idempotency.Pending, idempotency.Unknown, idempotency.Acknowledged}
	read := func(list func() ([]idempotency.Record, error), want int) time.Duration {
		return timeOf(5, func() {
			recs, err := list()
			if err != nil || len(recs) != want {
				b.Fatalf("%d records, %v; want %d", len(recs), err, want)
			}
		})
	}
	lr := s.(idempotency.RecentLister)
	for b.Loop() {
		all := read(func() ([]idempotency.Record, error) { return s.List(ctx, states...) }, 7*dayOrders)
		day := read(func() ([]idempotency.Record, error) { return lr.ListRecent(ctx, end.Add(-24*time.Hour), states...) }, dayOrders)
		minute := read(func() ([]idempotency.Record, error) { return lr.ListRecent(ctx, end.Add(-time.Minute), states...) }, 12)
		b.ReportMetric(float64(all.Microseconds())/1000, "list-ms")
		b.ReportMetric(float64(day.Microseconds())/1000, "day-ms")
		b.ReportMetric(float64(minute.Microseconds())/1000, "minute-ms")
		b.ReportMetric(float64(day)/float64(all), "day/list")
		b.ReportMetric(float64(minute)/float64(all), "minute/list")
	}
}

// BenchmarkDayOfHistory: the bolt file after 24 simulated hours at one
// order every 5 s (17,280 intents, settled acknowledged), with the
// default retention (7 days: nothing deleted yet). Goal: ≤ 8 MiB
// (x-goal ≤ 1). x-json is the file against the floor of the bytes the
// intents carry when whole (each create's body and order JSON).
func BenchmarkDayOfHistory(b *testing.B) {
	v := newVenue(b)
	sample := v.place(b, "sample", 1)[0]
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "intents.db")
		s := writeDay(b, path, sample)
		s.Close()
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		size := float64(info.Size())
		b.ReportMetric(size, "bytes")
		b.ReportMetric(size/dayOrders, "bytes/order")
		b.ReportMetric(size/(8<<20), "x-goal")
		b.ReportMetric(size/float64(dayOrders*(len(sample.Body)+len(sample.Order))), "x-json")
	}
}

// timeOf returns the fastest of n runs of f (the floor of its cost).
func timeOf(n int, f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range n {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// BenchmarkRecoverAfterADay: start-up after a day of history with
// nothing open: Recover (and Open + Recover + Close) against one signed
// GET to the in-memory venue (Account), measured in the same run. Goal:
// ≤ 20× (x-floor).
func BenchmarkRecoverAfterADay(b *testing.B) {
	v := newVenue(b)
	sample := v.place(b, "sample", 1)[0]
	path := filepath.Join(b.TempDir(), "intents.db")
	writeDay(b, path, sample).Close()
	ctx := context.Background()
	get := timeOf(50, func() {
		if _, err := v.c.Account(ctx); err != nil {
			b.Fatal(err)
		}
	})
	var recoverOnly, startUp time.Duration
	for b.Loop() {
		startUp = timeOf(20, func() {
			s, err := idempotency.Open(path, idempotency.Config{})
			if err != nil {
				b.Fatal(err)
			}
			c := client(b, v.srv, s)
			rep, err := c.Recover(ctx)
			if err != nil || len(rep.Acknowledged)+len(rep.Unresolved)+len(rep.NotPlaced) != 0 {
				b.Fatalf("Recover = %+v, %v; want nothing open", rep, err)
			}
			c.Close()
			s.Close()
		})
		s, err := idempotency.Open(path, idempotency.Config{})
		if err != nil {
			b.Fatal(err)
		}
		c := client(b, v.srv, s)
		if _, err := c.Recover(ctx); err != nil { // opens the Placer
			b.Fatal(err)
		}
		recoverOnly = timeOf(50, func() {
			if _, err := c.Recover(ctx); err != nil {
				b.Fatal(err)
			}
		})
		s.Close()
	}
	b.ReportMetric(float64(get.Microseconds()), "µs-GET")
	b.ReportMetric(float64(recoverOnly)/float64(get), "x-floor")
	b.ReportMetric(float64(startUp)/float64(get), "x-floor-open")
}

// BenchmarkRecoverOpen: 1,000 open intents, each sent once and each
// holding an order at the venue: Recover settles them all against one
// read of their window (the orders list, every page, as Recover reads
// it), measured in the same run. Goal: ≤ 10× (x-floor). It reports the
// bolt store's commits (each is two fdatasyncs: pages, then meta).
func BenchmarkRecoverOpen(b *testing.B) {
	const open = 1000
	v := newVenue(b)
	placed := v.place(b, "open", open)
	dir := b.TempDir()
	template := filepath.Join(dir, "template.db")
	s, err := idempotency.Open(template, idempotency.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, rec := range placed {
		rec.State, rec.OrderID, rec.Order, rec.Holder = idempotency.Unknown, "", nil, ""
		if _, _, err := s.Create(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	since := placed[0].FirstSentAt.Add(-2*time.Minute - transport.MaxClockOffset) // the lookups' lookback floor
	read := timeOf(10, func() {
		n := 0
		for _, err := range v.c.Orders(ctx, broker.OrderFilter{Symbol: "BTC-USD", CreatedAtStart: since}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n < open {
			b.Fatalf("the window holds %d orders; want %d", n, open)
		}
	})
	var best time.Duration
	var commits int
	for b.Loop() {
		for i := range 5 {
			path := filepath.Join(dir, fmt.Sprint("run-", i, ".db"))
			copyFile(b, template, path)
			s, err := idempotency.Open(path, idempotency.Config{})
			if err != nil {
				b.Fatal(err)
			}
			c := client(b, v.srv, s)
			if _, err := c.Account(ctx); err != nil { // the venue's clock, as at start-up
				b.Fatal(err)
			}
			before := idempotency.Commits(s)
			start := time.Now()
			rep, err := c.Recover(ctx)
			d := time.Since(start)
			if err != nil || len(rep.Acknowledged) != open {
				b.Fatalf("Recover = %d acknowledged, %d unresolved, %v; want %d acknowledged", len(rep.Acknowledged), len(rep.Unresolved), err, open)
			}
			commits = idempotency.Commits(s) - before
			if i == 0 || d < best {
				best = d
			}
			c.Close()
			s.Close()
		}
	}
	b.ReportMetric(float64(read.Microseconds()), "µs-read")
	b.ReportMetric(float64(best)/float64(read), "x-floor")
	b.ReportMetric(float64(commits), "commits")
}

func copyFile(b *testing.B, from, to string) {
	b.Helper()
	src, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
}
