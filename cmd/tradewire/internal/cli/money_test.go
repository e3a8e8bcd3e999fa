package cli

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
)

func TestRoundToIncrement(t *testing.T) {
	t.Parallel()
	tests := []struct{ d, inc, want string }{
		{"72.49055800562515", "0.01", "72.49"},
		{"72.495", "0.01", "72.50"}, // half away from zero
		{"-72.495", "0.01", "-72.50"},
		{"65923.2", "0.01", "65923.20"},
		{"0", "0.01", "0.00"},
		{"1.2345", "0.05", "1.25"},
		{"1234.5", "1", "1235"},
		{"0.00001234", "0.00000001", "0.00001234"},
		{"1.2345", "0.010", "1.23"}, // trailing zeros of the increment do not add places
		{"1.2345", "0", "1.2345"},   // no increment: exact
	}
	for _, tt := range tests {
		t.Run(tt.d+"/"+tt.inc, func(t *testing.T) {
			t.Parallel()
			got := roundToIncrement(decimal.RequireFromString(tt.d), decimal.RequireFromString(tt.inc))
			if got != tt.want {
				t.Errorf("roundToIncrement(%s, %s) = %s, want %s", tt.d, tt.inc, got, tt.want)
			}
		})
	}
}

func TestMoney(t *testing.T) {
	t.Parallel()
	cents, whole := decimal.RequireFromString("0.01"), decimal.RequireFromString("1")
	m := money{pairs: map[string]broker.TradingPair{
		"BTC-USD":  {Symbol: "BTC-USD", QuoteCode: "USD", QuoteIncrement: cents},
		"ETH-USD":  {Symbol: "ETH-USD", QuoteCode: "USD", QuoteIncrement: cents},
		"BTC-JPY":  {Symbol: "BTC-JPY", QuoteCode: "JPY", QuoteIncrement: whole},
		"DOGE-USD": {Symbol: "DOGE-USD", QuoteCode: "USD", QuoteIncrement: decimal.RequireFromString("0.000001")},
	}}
	d := decimal.RequireFromString("10.456")
	for _, tt := range []struct{ name, got, want string }{
		{"a known symbol", m.cell("BTC-USD", d), "10.46"},
		{"an unknown symbol is exact", m.cell("SOL-USD", d), "10.456"},
		{"a finer increment", m.cell("DOGE-USD", d), "10.456000"},
		{"a total over increments in one currency takes the coarsest", m.totalCell(d, "DOGE-USD", "BTC-USD"), "10.46"},
		{"null", m.nullCell("BTC-USD", decimal.NullDecimal{}), ""},
		{"a total in one currency", m.totalCell(d, "BTC-USD", "ETH-USD"), "10.46"},
		{"a total across currencies is exact", m.totalCell(d, "BTC-USD", "BTC-JPY"), "10.456"},
		{"a total with an unknown symbol is exact", m.totalCell(d, "BTC-USD", "SOL-USD"), "10.456"},
		{"a currency", m.currencyCell("USD", d), "10.46"},
		{"a currency no pair is quoted in", m.currencyCell("EUR", d), "10.456"},
		{"no pairs known", money{}.cell("BTC-USD", d), "10.456"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}
