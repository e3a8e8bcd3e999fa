package idempotency

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestListRecent: ListRecent leaves out the intents settled before since
// (updated and last signed before it) and keeps every other one List
// returns, on the memory and the bolt store: an open intent however old,
// a settled one updated or signed since, and, with a zero since,
// everything.
func TestListRecent(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	since := now.Add(-24 * time.Hour)
	for name, s := range retentionStores(t, Config{}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			settle(t, s, "old", Acknowledged, now.Add(-72*time.Hour))
			settle(t, s, "recent", Acknowledged, now.Add(-time.Hour))
			settle(t, s, "old-rejected", Rejected, now.Add(-72*time.Hour))
			open(t, s, "old-open", Unknown, now.Add(-72*time.Hour))
			// Updated long ago, but signed since (as a hand-edited or
			// clock-stepped record could be): kept.
			signed := Record{ClientOrderID: "signed", AccountNumber: "TW1", State: Pending, Body: []byte(`{}`),
				CreatedAt: now.Add(-73 * time.Hour), UpdatedAt: now.Add(-73 * time.Hour), Holder: "h"}
			if _, _, err := s.Create(ctx, signed); err != nil {
				t.Fatal(err)
			}
			signed.State, signed.OrderID = Acknowledged, "o-signed"
			signed.UpdatedAt, signed.LastSignedAt = now.Add(-72*time.Hour), now.Add(-time.Minute)
			if err := s.Update(ctx, signed); err != nil {
				t.Fatal(err)
			}

			lr := s.(RecentLister)
			got, err := lr.ListRecent(ctx, since, Pending, Unknown, Acknowledged)
			if err != nil {
				t.Fatal(err)
			}
			if ids := idsOf(got); !slices.Equal(ids, []string{"old-open", "recent", "signed"}) {
				t.Fatalf("ListRecent = %v; want old-open, recent, signed", ids)
			}
			all, err := lr.ListRecent(ctx, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			list, err := s.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if a, l := idsOf(all), idsOf(list); !slices.Equal(a, l) || len(a) != 5 {
				t.Fatalf("ListRecent with no since = %v, List = %v; want the same 5", a, l)
			}
		})
	}
}

// TestCompactBefore: reading a compact record's times without decoding it
// agrees with decoding it, for records of every shape.
func TestCompactBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	at := func() time.Time {
		if r.IntN(5) == 0 {
			return time.Time{}
		}
		return base.Add(time.Duration(r.Int64N(int64(96*time.Hour))) - 48*time.Hour)
	}
	text := func() string {
		switch r.IntN(4) {
		case 0:
			return ""
		case 1:
			return "0123456789abcdef0123456789abcdef"[:2*r.IntN(16)]
		case 2:
			return fmt.Sprintf("%08x-1c3f-4a2b-8d6e-9f0a1b2c3d4e", r.Uint32())
		}
		return fmt.Sprint("text ", r.Int())
	}
	for i := range 2000 {
		rec := Record{Key: text(), Namespace: text(), AccountNumber: text(), Symbol: text(), Fingerprint: text(),
			OrderID: text(), Reason: text(), State: []State{Acknowledged, Rejected, NotPlaced}[r.IntN(3)],
			Sends: r.IntN(4), Answered2xx: r.IntN(2) == 0, Notional: text(),
			CreatedAt: at(), FirstSentAt: at(), LastSignedAt: at(), UpdatedAt: at()}
		v, err := encodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := decodeRecord("id", v)
		if err != nil {
			t.Fatal(err)
		}
		since := base.Add(time.Duration(r.Int64N(int64(48*time.Hour))) - 24*time.Hour)
		want := (!dec.LastSignedAt.IsZero() || !dec.UpdatedAt.IsZero()) && settledBefore(dec, since)
		if got := compactBefore(v, since); got != want {
			t.Fatalf("record %d %+v since %v: compactBefore = %v, decoded says %v", i, dec, since, got, want)
		}
	}
	if compactBefore([]byte(`{"state":"acknowledged"}`), base) {
		t.Fatal("a JSON record was judged without being decoded")
	}
}

func idsOf(recs []Record) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ClientOrderID
	}
	slices.Sort(ids)
	return ids
}
