package redisbudget

import (
	"testing"
	"time"
)

// The shared bucket keeps the same headroom under the venue's budget as
// the in-process one (adaptive.Headroom): 99 a minute, bursts of 299,
// for the venue's 100 and 300.
func TestGCRALimitKeepsHeadroom(t *testing.T) {
	l := gcraLimit(100, 300)
	if l.Rate != 99_000 || l.Period != 1000*time.Minute || l.Burst != 299 {
		t.Errorf("gcraLimit(100, 300) = %+v, want 99,000 per 1,000 minutes, burst 299", l)
	}
}
