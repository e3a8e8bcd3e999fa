package broker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/redisbudget"
)

// EnvRedisURL names the Redis that a fleet of processes shares, read by
// WithEnv.
const EnvRedisURL = "TRADEWIRE_REDIS_URL"

// fleetSetupTimeout bounds reaching Redis at start-up.
const fleetSetupTimeout = 10 * time.Second

// WithRedisURL makes every process that names the same Redis and account
// share one rate budget (package redisbudget): together they never spend
// past the venue's 100 requests a minute, and a 429 seen by any of them
// pauses them all. New connects at once: a Redis that cannot be reached is
// an error, never a silent fallback to a private budget. The account number
// (WithAccountNumber) keys the budget; without it, New takes it from Redis,
// where the first process to resolve it left it, or reads the accounts
// list once itself. Close the Client to release the connection.
func WithRedisURL(redisURL string) Option { return func(c *config) { c.redisURL = redisURL } }

// fleetBudget is the Redis connection and budget New made.
type fleetBudget struct {
	rdb     *redis.Client
	budget  *redisbudget.Budget
	account string
}

func (f *fleetBudget) close() error {
	if f == nil {
		return nil
	}
	return f.rdb.Close()
}

// Close releases what New opened for WithRedisURL; it is a no-op
// otherwise.
func (c *Client) Close() error { return c.fleet.close() }

// RedactRedisURL returns a Redis URL fit for messages: its password, if
// any, replaced.
func RedactRedisURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable Redis URL)"
	}
	return u.Redacted()
}

func (cfg *config) shareBudget(base string, signer *signing.Signer) (*fleetBudget, error) {
	opt, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		return nil, &ArgumentError{Field: "WithRedisURL", Value: RedactRedisURL(cfg.redisURL), Reason: "not a redis:// or rediss:// URL"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetSetupTimeout)
	defer cancel()
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("broker: Redis at %s cannot be reached (refusing to fall back to a private rate budget): %w", RedactRedisURL(cfg.redisURL), err)
	}
	account, err := cfg.fleetAccount(ctx, rdb, base, signer)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	var bopts []redisbudget.Option
	if cfg.rateSet {
		bopts = append(bopts, redisbudget.WithRateLimit(cfg.perMinute, cfg.burst))
	}
	if cfg.clock != nil {
		bopts = append(bopts, redisbudget.WithClock(cfg.clock))
	}
	if cfg.log != nil {
		bopts = append(bopts, redisbudget.WithLogger(*cfg.log))
	}
	budget, err := redisbudget.New(ctx, rdb, account, bopts...)
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	return &fleetBudget{rdb: rdb, budget: budget, account: account}, nil
}

// fleetAccount finds the account that keys the shared budget: the one
// given, else the one a process of the fleet recorded for this API key,
// else one accounts read (through a private bucket: the only request of a
// fleet made outside its budget), recorded for the others.
func (cfg *config) fleetAccount(ctx context.Context, rdb *redis.Client, base string, signer *signing.Signer) (string, error) {
	if cfg.account != "" {
		return cfg.account, nil
	}
	key := "tradewire:apikey:" + signer.KeyID() + ":account"
	switch n, err := rdb.Get(ctx, key).Result(); {
	case err == nil && validAccountNumber(n):
		return n, nil
	case err != nil && !errors.Is(err, redis.Nil):
		return "", fmt.Errorf("broker: Redis at %s: %w", RedactRedisURL(cfg.redisURL), err)
	}
	tc, err := transport.New(base, signer, cfg.tOpts...)
	if err != nil {
		return "", fmt.Errorf("broker: %w", err)
	}
	c, err := newClient(tc, cfg)
	if err != nil {
		return "", err
	}
	n, err := c.accountNumber(ctx)
	if err != nil {
		return "", fmt.Errorf("broker: resolving the account that keys the shared budget: %w", err)
	}
	if err := rdb.Set(ctx, key, n, 0).Err(); err != nil {
		return "", fmt.Errorf("broker: Redis at %s: %w", RedactRedisURL(cfg.redisURL), err)
	}
	return n, nil
}
