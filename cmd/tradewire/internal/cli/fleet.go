package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redisurl"
	"github.com/tradewire/tradewire/transport"
)

// A fleet: processes sharing one Redis (--redis-url) share the rate
// budget and the intent store.

// redisURL returns the fleet's Redis, or "" for a process on its own.
// --sim runs alone: its venue lives inside the command.
func (a *app) redisURL() string {
	if a.flags.sim {
		return ""
	}
	u, _ := a.setting(flagRedisURL, envRedisURL)
	return strings.TrimSpace(u)
}

// fleetTransport builds the transport through broker.New with the shared
// budget: New reaches Redis first and refuses to start without it. The
// shared budget replaces any other limiter in opts.
func (a *app) fleetTransport(url string, v *venueConfig, opts transport.Config) (*transport.Client, error) {
	log, err := a.logger()
	if err != nil {
		return nil, err
	}
	// opts carry the CLI's clock and rate limit (RatePerMinute and Burst,
	// which sets the shared budget's).
	c, err := broker.New(broker.Config{APIKey: v.apiKey, PrivateKey: v.key, BaseURL: v.baseURL, RedisURL: url,
		Logger: log, Transport: opts, AccountNumber: a.accountNumberFlag()})
	if err != nil {
		return nil, setupError(redactRedis(err.Error(), url), err)
	}
	a.closers = append(a.closers, c.Close)
	return c.Transport(), nil
}

// fleetStore opens the intent store shared through Redis for account.
func (a *app) fleetStore(ctx context.Context, url, account string) (idempotency.Store, error) {
	s, err := redisstore.Open(ctx, url, account, redisstore.Config{Clock: a.clock()})
	if err != nil {
		return nil, setupError(fmt.Sprintf("--%s: %s", flagRedisURL, redactRedis(err.Error(), url)), err)
	}
	return s, nil
}

// redactRedis removes a Redis URL's password from a message.
func redactRedis(msg, url string) string {
	if url == "" {
		return msg
	}
	return strings.ReplaceAll(msg, url, redisurl.Redact(url))
}

// quietRedis keeps the Redis client's own logging off stderr, which
// carries one line on failure and nothing else.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
