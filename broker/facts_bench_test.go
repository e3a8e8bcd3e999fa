package broker

import (
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkLookupPageFacts decodes the facts of one page of 100 orders
// the way the Placer's lookup reads them: each row of the list handed to
// the Codec once (an op is a page).
//
//	go test -run '^$' -bench LookupPageFacts -benchmem ./broker/
func BenchmarkLookupPageFacts(b *testing.B) {
	row, err := os.ReadFile("testdata/fixtures/v2/order_filled.json")
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]json.RawMessage, 100)
	for i := range rows {
		rows[i] = row
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range rows {
			if f, err := (orderCodec{}).Facts(r); err != nil || f.ClientOrderID == "" {
				b.Fatal(f, err)
			}
		}
	}
}
