package pgstore

import (
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/claim"
)

// ShortLeaseForTest is a Config with Lease d without the floor, for tests
// that watch a lease lapse on the server's clock.
func ShortLeaseForTest(cfg Config, d time.Duration) Config {
	cfg.Lease, cfg.shortLease = d, true
	return cfg
}

// Owner returns the id s claims intents under: host/pid/random.
func Owner(s idempotency.Store) string { return s.(*store).owner }

// InProgressError lets the tests read the details of Create's in-progress
// refusal, which callers read in its message.
type InProgressError = claim.InProgressError

// GuaranteeFor exposes the rule that decides a Guarantee.
var GuaranteeFor = guarantee
