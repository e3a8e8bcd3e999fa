package venue

import (
	"crypto/ed25519"
	"crypto/sha256"
	"net/http"
	"testing"
	"time"
)

// TestRateLimitsArePerAccount: each account has its own buckets, and a
// schedule step reaches every account's, whether or not it has been used.
func TestRateLimitsArePerAccount(t *testing.T) {
	t.Parallel()
	keyOf := func(s string) ed25519.PrivateKey {
		seed := sha256.Sum256([]byte(s))
		return ed25519.NewKeyFromSeed(seed[:])
	}
	ka, kb := keyOf("a"), keyOf("b")
	h := setup(t, engineConfig{
		Accounts: []accountConfig{
			{Number: "A1", APIKey: "key-a", PublicKey: ka.Public().(ed25519.PublicKey)},
			{Number: "B1", APIKey: "key-b", PublicKey: kb.Public().(ed25519.PublicKey)},
		},
		Limits: RateLimits{
			Classes: map[string]RateLimit{"order_writes": {PerMinute: 60, Burst: 3}},
			Schedule: []RateLimit{{At: 10 * time.Second, Class: "order_writes",
				PerMinute: 60, Burst: 1}},
		},
	})
	as := func(key string, priv ed25519.PrivateKey) *harness {
		c := *h
		c.key, c.priv = key, priv
		return &c
	}
	a, b := as("key-a", ka), as("key-b", kb)
	served := func(h *harness, n int) int {
		ok := 0
		for range n {
			if resp, _ := h.do("POST", pathOrders+"x/cancel/", nil); resp.StatusCode != http.StatusTooManyRequests {
				ok++
			}
		}
		return ok
	}
	if n := served(a, 4); n != 3 {
		t.Errorf("account A served %d of 4, want its burst 3", n)
	}
	if n := served(b, 4); n != 3 {
		t.Errorf("account B served %d of 4 after A drained its own: want 3", n)
	}
	h.clock.Advance(20 * time.Second)
	for name, x := range map[string]*harness{"A": a, "B": b} {
		if n := served(x, 3); n != 1 {
			t.Errorf("account %s after the step to burst 1: served %d of 3, want 1", name, n)
		}
	}
}
