package wire

import "testing"

func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         Class
	}{
		{"GET", "/api/v2/crypto/marketdata/best_bid_ask/", ClassMarketData},
		{"GET", "/api/v1/crypto/marketdata/best_bid_ask/", ClassMarketData},
		{"GET", "/api/v2/crypto/trading/estimated_price/", ClassMarketData},
		{"GET", "/api/v1/crypto/marketdata/estimated_price/", ClassMarketData},
		{"GET", "/api/v2/crypto/trading/trading_pairs/", ClassMarketData},
		{"GET", "/api/v1/crypto/trading/trading_pairs/", ClassMarketData},
		{"GET", "/api/v2/crypto/trading/accounts/", ClassAccountReads},
		{"GET", "/api/v1/crypto/trading/accounts/", ClassAccountReads},
		{"GET", "/api/v2/crypto/trading/holdings/", ClassAccountReads},
		{"GET", "/api/v2/crypto/trading/orders/", ClassOrderReads},
		{"GET", "/api/v2/crypto/trading/orders/0b5a7d9e-1c3f-4a2b-8d6e-9f0a1b2c3d4e/", ClassOrderReads},
		{"GET", "/api/v1/crypto/trading/orders/", ClassOrderReads},
		{"POST", "/api/v2/crypto/trading/orders/", ClassOrderWrites},
		{"POST", "/api/v2/crypto/trading/orders/0b5a7d9e-1c3f-4a2b-8d6e-9f0a1b2c3d4e/cancel/", ClassOrderWrites},
		{"POST", "/api/v1/crypto/trading/orders/", ClassOrderWrites},
		{"GET", "/api/v3/crypto/trading/orders/", ClassOther},
		{"GET", "/", ClassOther},
	} {
		if got := ClassOf(tc.method, tc.path); got != tc.want {
			t.Errorf("ClassOf(%s, %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
	if got := Class(9).String(); got != "Class(9)" {
		t.Errorf("Class(9).String() = %q", got)
	}
}
