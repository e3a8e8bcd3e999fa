package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/pgbudget"
)

// sharePostgres connects to the fleet's PostgreSQL and returns the
// account's shared budget there, at tc's rate limit and on tc's clock.
// Without Config.AccountNumber, tc (with its own bucket) reads the
// accounts list once, and the read is charged to the shared budget.
func (cfg *config) sharePostgres(tc *transport.Client, _ *signing.Signer) (*fleetBudget, error) {
	tcfg := tc.Config()
	if tcfg.Adaptive {
		return nil, &ArgumentError{Field: "Transport.Adaptive", Reason: "the fleet's budget on PostgreSQL does not learn the venue's rate: use a fixed RatePerMinute, or RedisURL"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetSetupTimeout)
	defer cancel()
	unreachable := func(err error) error {
		return fmt.Errorf("broker: the fleet's PostgreSQL cannot be reached (refusing to fall back to a private rate budget): %w", err)
	}
	account := cfg.account
	discovered := false
	if account == "" {
		// The server is reached before the accounts read, so that one
		// that cannot be reached costs no request to the venue.
		pool, err := pgconn.Connect(ctx, cfg.pgURL, pgconn.Options{Unavailable: transport.ErrUnavailable})
		if err != nil {
			return nil, unreachable(err)
		}
		pool.Close()
		c, err := newClient(tc, cfg)
		if err != nil {
			return nil, err
		}
		if account, err = c.accountNumber(ctx); err != nil {
			return nil, fmt.Errorf("broker: resolving the account that keys the shared budget: %w", err)
		}
		discovered = true
	}
	budget, err := pgbudget.Open(ctx, cfg.pgURL, account, pgbudget.Config{RatePerMinute: tcfg.RatePerMinute, Burst: tcfg.Burst, Clock: tcfg.Clock})
	if errors.Is(err, transport.ErrUnavailable) {
		return nil, unreachable(err)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: the fleet's PostgreSQL at %s: %w", pgconn.Hosts(cfg.pgURL), err)
	}
	if discovered {
		// The read came out of the venue's budget for the account.
		if err := budget.Wait(ctx); err != nil {
			budget.Close()
			return nil, fmt.Errorf("broker: charging the accounts read to the shared budget: %w", err)
		}
	}
	url := cfg.pgURL
	return &fleetBudget{budget: budget, account: account,
		closeAll: func() error { budget.Close(); return nil },
		store: func(ctx context.Context, n string, clock clockwork.Clock) (idempotency.Store, error) {
			return pgstore.Open(ctx, url, n, pgstore.Config{Clock: clock})
		}}, nil
}
