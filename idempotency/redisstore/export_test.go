package redisstore

import "time"

// WithShortLeaseForTest is WithLease without the floor, for tests that
// watch a lease lapse on Redis's clock within a second or two.
func WithShortLeaseForTest(d time.Duration) Option {
	return func(c *config) { c.lease, c.shortLease = d, true }
}

// InProgressError lets the tests read the details of Create's in-progress
// refusal, which callers read in its message.
type InProgressError = inProgressError
