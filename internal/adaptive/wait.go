package adaptive

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Sleep waits d on clk, or until ctx is done, when it returns ctx's error.
func Sleep(ctx context.Context, clk clockwork.Clock, d time.Duration) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}

// WaitToken waits d, from now, for a rate budget's token: at once an
// error matching context.DeadlineExceeded, naming pkg, when ctx's
// deadline comes before the token, else Sleep's.
func WaitToken(ctx context.Context, clk clockwork.Clock, now time.Time, d time.Duration, pkg string) error {
	if dl, ok := ctx.Deadline(); ok && now.Add(d).After(dl) {
		return fmt.Errorf("%s: rate budget: a token is %v away, past the context deadline: %w", pkg, d, context.DeadlineExceeded)
	}
	return Sleep(ctx, clk, d)
}
