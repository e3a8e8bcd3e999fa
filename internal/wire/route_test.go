package wire

import "testing"

func TestRoute(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{PathAccounts, PathAccounts},
		{PathBestBidAsk, PathBestBidAsk},
		{v1EstimatedPrice, v1EstimatedPrice},
		{"/api/v1/crypto/trading/accounts/", "/api/v1/crypto/trading/accounts/"},
		{PathOrders + "0b5a7d9e-1c3f-4a2b-8d6e-9f0a1b2c3d4e/", PathOrders + "{id}/"},
		{PathOrders + "0b5a7d9e-1c3f-4a2b-8d6e-9f0a1b2c3d4e/cancel/", PathOrders + "{id}/cancel/"},
		{"/api/v2/crypto/trading/AB1234567890/orders/", "/api/v2/crypto/trading/{id}/orders/"},
		{"/api/v3/x", "/api/{id}/{id}"},
		{"/a?b=c", "/{id}"},
		{"/", "/"},
		{"", ""},
		{"//orders//", "//orders//"},
	} {
		if got := Route(tc.path); got != tc.want {
			t.Errorf("Route(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestRouteOfAFixedPathDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Route(PathOrders) }); n != 0 {
		t.Errorf("Route(PathOrders) allocates %v times, want 0", n)
	}
}
