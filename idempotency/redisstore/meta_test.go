package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
)

// BenchmarkMetaRead: what a Placer's read of the halt record (GetMeta, one
// HGET) costs beside the claim every Place writes (Create, one durable
// script), measured in the same run: GetMeta's time as a ratio of
// Create's.
func BenchmarkMetaRead(b *testing.B) {
	rdb, acct := redistest.Setup(b)
	store, err := redisstore.New(context.Background(), rdb, acct, redisstore.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	s := store.(interface {
		idempotency.Store
		idempotency.Meta
	})
	ctx := context.Background()
	if err := s.PutMeta(ctx, "halt", []byte(`{"halted":false}`)); err != nil {
		b.Fatal(err)
	}
	var read, create time.Duration
	now := time.Now()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := s.GetMeta(ctx, "halt"); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		rec := record(acct, fmt.Sprint("bench-", i), now)
		rec.Holder = "h"
		if _, _, err := s.Create(ctx, rec); err != nil {
			b.Fatal(err)
		}
		read += mid.Sub(start)
		create += time.Since(mid)
	}
	b.ReportMetric(float64(read.Microseconds())/float64(b.N), "get-µs/op")
	b.ReportMetric(float64(create.Microseconds())/float64(b.N), "create-µs/op")
	b.ReportMetric(float64(read)/float64(create), "get/create")
}
