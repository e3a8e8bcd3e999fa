package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redisurl"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/redisbudget"
)

// fleetSetupTimeout bounds reaching Redis at start-up.
const fleetSetupTimeout = 10 * time.Second

// fleetBudget is the fleet's shared budget New made, on Redis or
// PostgreSQL, with the way to the fleet's intent store on the same server.
type fleetBudget struct {
	budget  transport.Limiter
	account string
	// store opens the fleet's intent store for an account.
	store    func(ctx context.Context, account string, clock clockwork.Clock) (idempotency.Store, error)
	closeAll func() error
}

func (f *fleetBudget) close() error {
	if f == nil {
		return nil
	}
	return f.closeAll()
}

// Close releases what the Client opened: the intent store it opened for
// placing (never Config.IntentStore) and the connection to the fleet's
// Redis or PostgreSQL. It is a no-op for a Client that only read.
func (c *Client) Close() error {
	return errors.Join(c.closeStore(), c.fleet.close())
}

// redisUnavailableError is a Redis that failed while New set up the
// fleet's budget: nothing was sent to the venue. It matches
// transport.ErrUnavailable, so callers treat it as an outage to retry
// later, not as a usage error.
type redisUnavailableError struct {
	msg string
	err error
}

func (e *redisUnavailableError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *redisUnavailableError) Unwrap() error { return e.err }
func (e *redisUnavailableError) Is(target error) bool {
	return target == transport.ErrUnavailable
}

func (cfg *config) redisFailed(err error, what string) error {
	return &redisUnavailableError{msg: fmt.Sprintf("broker: Redis at %s: %s", redisurl.Redact(cfg.redisURL), what), err: err}
}

// Account discovery in a fleet: how long one process may hold the right
// to read the accounts list for the others, and how long a waiting
// process blocks on Redis between looks.
const (
	discoveryLock = 5 * time.Second
	discoveryPoll = 100 * time.Millisecond
)

// releaseLock deletes KEYS[1] if it still holds ARGV[1].
var releaseLock = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// shareBudget connects to the fleet's Redis and returns the account's
// shared budget, at tc's rate limit (tc.Config()) and on tc's
// clock. tc, with its own bucket, reads the accounts list if the account
// must be discovered.
func (cfg *config) shareBudget(tc *transport.Client, signer *signing.Signer) (*fleetBudget, error) {
	opt, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		return nil, &ArgumentError{Field: "RedisURL", Value: redisurl.Redact(cfg.redisURL), Reason: "not a redis:// or rediss:// URL"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetSetupTimeout)
	defer cancel()
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, cfg.redisFailed(err, "cannot be reached (refusing to fall back to a private rate budget)")
	}
	tcfg := tc.Config()
	bcfg := redisbudget.Config{RatePerMinute: tcfg.RatePerMinute, Burst: tcfg.Burst, Adaptive: tcfg.Adaptive, Clock: tcfg.Clock, Logger: cfg.log}
	budgetFor := func(account string) (*redisbudget.Budget, error) {
		b, err := redisbudget.New(ctx, rdb, account, bcfg)
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		return b, nil
	}
	account := cfg.account
	var budget *redisbudget.Budget
	if account != "" {
		budget, err = budgetFor(account)
	} else {
		account, budget, err = cfg.fleetAccount(ctx, rdb, tc, signer, budgetFor)
	}
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return &fleetBudget{budget: budget, account: account, closeAll: rdb.Close,
		store: func(ctx context.Context, n string, clock clockwork.Clock) (idempotency.Store, error) {
			return redisstore.New(ctx, rdb, n, redisstore.Config{Clock: clock})
		}}, nil
}

// fleetAccount finds the account that keys the shared budget when
// Config.AccountNumber did not give it: the one a process of the fleet
// recorded in Redis for this API key, else one accounts read. Processes
// that start together take turns: one holds a lock in Redis while it
// reads the accounts list (through a private bucket, since the budget's
// key is what it learns), charges that read to the fleet's budget, and
// only then records the account; the others wait for it, blocking on
// Redis. So the fleet never spends past the venue's budget, even at a
// burst on a fresh Redis. (A process that must discover the account while
// others already spend the budget, as after Redis lost the record, makes
// one request outside it: Config.AccountNumber avoids even that.)
func (cfg *config) fleetAccount(ctx context.Context, rdb *redis.Client, tc *transport.Client, signer *signing.Signer,
	budgetFor func(string) (*redisbudget.Budget, error)) (string, *redisbudget.Budget, error) {
	key := "tradewire:apikey:" + signer.KeyID() + ":account"
	lock, ready := key+":lock", key+":ready"
	var b [12]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	for {
		switch n, err := rdb.Get(ctx, key).Result(); {
		case err == nil && validAccountNumber(n):
			budget, err := budgetFor(n)
			return n, budget, err
		case err != nil && !errors.Is(err, redis.Nil):
			return "", nil, cfg.redisFailed(err, "reading the fleet's account")
		}
		won, err := rdb.SetNX(ctx, lock, token, discoveryLock).Result()
		if err != nil {
			return "", nil, cfg.redisFailed(err, "taking the account-discovery lock")
		}
		if won {
			n, budget, err := cfg.discoverAccount(ctx, rdb, tc, budgetFor, key, ready)
			releaseLock.Run(context.WithoutCancel(ctx), rdb, []string{lock}, token)
			return n, budget, err
		}
		// Another process is reading it: block on Redis until it says so
		// (or a while passes), then look again.
		// (BLPOP with a fractional timeout, which go-redis's BLPop rounds
		// up to a second.)
		switch v, err := rdb.Do(ctx, "blpop", ready, discoveryPoll.Seconds()).StringSlice(); {
		case err == nil && len(v) == 2:
			rdb.RPush(ctx, ready, v[1]) // wake the next waiter
		case err == nil:
		case errors.Is(err, redis.Nil):
		case ctx.Err() != nil:
			return "", nil, cfg.redisFailed(ctx.Err(), "waiting for another process to resolve the account")
		default:
			return "", nil, cfg.redisFailed(err, "waiting for another process to resolve the account")
		}
	}
}

// discoverAccount reads the accounts list once, charges the read to the
// account's shared budget, then records the account for the fleet.
func (cfg *config) discoverAccount(ctx context.Context, rdb *redis.Client, tc *transport.Client,
	budgetFor func(string) (*redisbudget.Budget, error), key, ready string) (string, *redisbudget.Budget, error) {
	c, err := newClient(tc, cfg)
	if err != nil {
		return "", nil, err
	}
	n, err := c.accountNumber(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("broker: resolving the account that keys the shared budget: %w", err)
	}
	budget, err := budgetFor(n)
	if err != nil {
		return "", nil, err
	}
	// The read came out of the venue's budget for the account: take it
	// from the fleet's before anyone can spend that token.
	if err := budget.Wait(ctx); err != nil {
		return "", nil, fmt.Errorf("broker: charging the accounts read to the shared budget: %w", err)
	}
	if err := rdb.Set(ctx, key, n, 0).Err(); err != nil {
		return "", nil, cfg.redisFailed(err, "recording the fleet's account")
	}
	pipe := rdb.Pipeline()
	pipe.RPush(ctx, ready, n)
	pipe.PExpire(ctx, ready, discoveryLock)
	pipe.Exec(ctx)
	return n, budget, nil
}
