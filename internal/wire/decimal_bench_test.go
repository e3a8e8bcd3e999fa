package wire

import (
	"encoding/json"
	"testing"
	"time"
)

// nestedDecimal decodes as Decimal did before: a quoted value is decoded
// a second time, by json.Unmarshal, to get its text.
type nestedDecimal struct{ Decimal }

func (x *nestedDecimal) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	d, err := ParseDecimal(s)
	if err != nil {
		return err
	}
	x.Decimal = Decimal{d: d, valid: true}
	return nil
}

// moneyFields are the quoted decimals of one filled order, as the venue
// lists it.
const moneyFields = `{"a":"0.000100000000000000","b":"36352.780000000000000000","c":"0.000100000000000000",
"d":"36351.100000000000000000","e":"36351.100000000000000000","f":"0.000100000000000000"}`

type moneyOf[D any] struct{ A, B, C, D, E, F D }

// BenchmarkQuotedDecimals decodes the quoted money fields of one order,
// each iteration once with Decimal and once as before (nestedDecimal), in
// alternating order, and reports the time of each and their ratio.
//
//	go test -run '^$' -bench QuotedDecimals ./internal/wire/
func BenchmarkQuotedDecimals(b *testing.B) {
	in := []byte(moneyFields)
	var now, before time.Duration
	once := func(v any, sum *time.Duration) {
		t := time.Now()
		if err := json.Unmarshal(in, v); err != nil {
			b.Fatal(err)
		}
		*sum += time.Since(t)
	}
	i := 0
	for b.Loop() {
		var x moneyOf[Decimal]
		var y moneyOf[nestedDecimal]
		if i%2 == 0 {
			once(&x, &now)
			once(&y, &before)
		} else {
			once(&y, &before)
			once(&x, &now)
		}
		if !x.F.Val().Equal(y.F.Val()) || !x.B.Val().Equal(y.B.Val()) {
			b.Fatalf("%v vs %v", x, y)
		}
		i++
	}
	b.ReportMetric(float64(now.Nanoseconds())/float64(i), "ns-once/op")
	b.ReportMetric(float64(before.Nanoseconds())/float64(i), "ns-twice/op")
	b.ReportMetric(float64(now)/float64(before), "x-twice")
}
