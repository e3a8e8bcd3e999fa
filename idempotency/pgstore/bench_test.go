package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgconn"
)

// BenchmarkCreate: a Create (the claim every Place writes first) on the
// shared primary and synchronous standby, beside its floor measured in the
// same run: one INSERT ... ON CONFLICT DO NOTHING of a small row in
// autocommit, on a pool of its own to the same server (a commit the
// standby confirms). Reported: each one's µs/op and Create's time as a
// ratio of the floor's.
func BenchmarkCreate(b *testing.B) {
	url, acct := setup(b)
	ctx := context.Background()
	s := open(b, url, acct, pgstore.Config{})
	pool, err := pgconn.Connect(ctx, url, pgconn.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var create, floor time.Duration
	now := time.Now()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		rec := record(acct, fmt.Sprint("bench-", i), now)
		rec.Holder = "h"
		if _, created, err := s.Create(ctx, rec); err != nil || !created {
			b.Fatal(created, err)
		}
		mid := time.Now()
		if _, err := pool.Exec(ctx, `INSERT INTO tradewire_intent_meta (account, name, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			acct, fmt.Sprint("floor-", i), []byte("x")); err != nil {
			b.Fatal(err)
		}
		create += mid.Sub(start)
		floor += time.Since(mid)
	}
	b.ReportMetric(float64(create.Microseconds())/float64(b.N), "create-µs/op")
	b.ReportMetric(float64(floor.Microseconds())/float64(b.N), "floor-µs/op")
	b.ReportMetric(float64(create)/float64(floor), "x-baseline")
}
