package wire

import "strings"

// pathCancel is the last segment of an order's cancel path,
// PathOrders + "{id}/cancel/".
const pathCancel = "cancel"

// routeWords are the fixed segments of the venue's v1 and v2 paths: every
// segment of a path built from the Path constants, "v1" and the cancel
// path's last.
var routeWords = func() map[string]bool {
	words := map[string]bool{"v1": true, pathCancel: true}
	for _, p := range []string{PathAccounts, PathHoldings, PathTradingPairs, PathBestBidAsk, PathEstimatedPrice, PathOrders, v1EstimatedPrice} {
		for _, seg := range strings.Split(p, "/") {
			if seg != "" {
				words[seg] = true
			}
		}
	}
	return words
}()

// Route returns path (no query string) as a route template: every
// segment that is not a fixed word of the venue's paths (an order id, an
// account number, anything else) is replaced with "{id}", so that the
// template holds no value of a request, only the shape of the endpoint:
// "/api/v2/crypto/trading/orders/{id}/cancel/". A path of fixed words
// only comes back as it is.
func Route(path string) string {
	if routeFixed(path) {
		return path
	}
	var b strings.Builder
	b.Grow(len(path) + 8)
	for i, seg := range strings.Split(path, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if seg == "" || routeWords[seg] {
			b.WriteString(seg)
		} else {
			b.WriteString("{id}")
		}
	}
	return b.String()
}

// routeFixed reports whether every segment of path is empty or a fixed
// word.
func routeFixed(path string) bool {
	for path != "" {
		seg, rest, _ := strings.Cut(path, "/")
		if seg != "" && !routeWords[seg] {
			return false
		}
		path = rest
	}
	return true
}
