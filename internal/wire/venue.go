package wire

import (
	"strconv"
	"strings"
)

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

// Class is an endpoint class: the venue applies its rate limit per
// endpoint, and a client-side limiter that learns the limit keeps one
// budget per class. Every path of the venue's v1 and v2 APIs falls in one.
type Class uint8

// The endpoint classes.
const (
	// ClassMarketData: best bid/ask, estimated price, trading pairs.
	ClassMarketData Class = iota
	// ClassAccountReads: accounts and holdings.
	ClassAccountReads
	// ClassOrderReads: listing orders and reading one.
	ClassOrderReads
	// ClassOrderWrites: creates and cancels (every method but GET and
	// HEAD on the orders path).
	ClassOrderWrites
	// ClassOther: a path outside the venue's known APIs.
	ClassOther
	// NumClasses is the number of classes.
	NumClasses
)

var classNames = [NumClasses]string{"market data", "account reads", "order reads", "order writes", "other"}

// String returns the class's name, such as "order reads".
func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// endpointClasses is the one table from the venue's paths to their
// classes, keyed by the v2 path. A v1 path is the v2 one with /api/v1/
// for /api/v2/, except estimated price, which v1 keeps under marketdata
// (v1EstimatedPrice).
var endpointClasses = [...]struct {
	path  string
	class Class
}{
	{PathBestBidAsk, ClassMarketData},
	{PathEstimatedPrice, ClassMarketData},
	{PathTradingPairs, ClassMarketData},
	{PathAccounts, ClassAccountReads},
	{PathHoldings, ClassAccountReads},
	{PathOrders, ClassOrderReads}, // writes: see ClassOf
}

const v1EstimatedPrice = "/api/v1/crypto/marketdata/estimated_price/"

// ClassOf returns the endpoint class of a request: method and path (no
// query string), v1 or v2. Anything but a GET or HEAD under the orders
// path (a create, a cancel) is ClassOrderWrites; a path the venue does not
// serve is ClassOther.
func ClassOf(method, path string) Class {
	if p, ok := strings.CutPrefix(path, "/api/v1/"); ok {
		if strings.HasPrefix(path, v1EstimatedPrice) {
			return ClassMarketData
		}
		path = "/api/v2/" + p
	}
	for _, e := range endpointClasses {
		if !strings.HasPrefix(path, e.path) {
			continue
		}
		if e.path == PathOrders && method != "GET" && method != "HEAD" {
			return ClassOrderWrites
		}
		return e.class
	}
	return ClassOther
}
