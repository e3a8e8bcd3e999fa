package wire

// The venue's v2 paths: every request-target tradewire builds starts with
// one of these.
const (
	PathAccounts       = "/api/v2/crypto/trading/accounts/"
	PathHoldings       = "/api/v2/crypto/trading/holdings/"
	PathTradingPairs   = "/api/v2/crypto/trading/trading_pairs/"
	PathBestBidAsk     = "/api/v2/crypto/marketdata/best_bid_ask/"
	PathEstimatedPrice = "/api/v2/crypto/trading/estimated_price/"
	PathOrders         = "/api/v2/crypto/trading/orders/"
)

// ValidAccountNumber is the one account-number rule: 1 to 64 ASCII
// letters and digits, so that it is safe in a query string and a key.
func ValidAccountNumber(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// ValidCode reports whether s is an upper-case asset or quote code: 1 to
// 16 of A-Z and 0-9.
func ValidCode(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// ValidSymbol is the one symbol rule: two codes joined by one hyphen,
// such as BTC-USD.
func ValidSymbol(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '-' {
			return ValidCode(s[:i]) && ValidCode(s[i+1:])
		}
	}
	return false
}
