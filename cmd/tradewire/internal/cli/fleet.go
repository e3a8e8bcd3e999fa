package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/internal/redisurl"
	"github.com/tradewire/tradewire/transport"
)

// A fleet: processes sharing one Redis (--redis-url) or one PostgreSQL
// (--postgres-url) share the rate budget and the intent store.

// fleetServer is the fleet's server: its URL (empty for a process on its
// own) and the flag that gave it.
type fleetServer struct {
	url, flag, env string
	postgres       bool
}

// redact removes the server URL's password from a message.
func (f fleetServer) redact(msg string) string {
	if f.url == "" {
		return msg
	}
	if f.postgres {
		return strings.ReplaceAll(msg, f.url, pgconn.Redact(f.url))
	}
	return strings.ReplaceAll(msg, f.url, redisurl.Redact(f.url))
}

// fleet returns the fleet's server, or a zero fleetServer for a process
// on its own. --sim runs alone: its venue lives inside the command.
func (a *app) fleet() (fleetServer, error) {
	if a.flags.sim {
		return fleetServer{}, nil
	}
	r, _ := a.setting(flagRedisURL, envRedisURL)
	p, _ := a.setting(flagPostgresURL, envPostgresURL)
	r, p = strings.TrimSpace(r), strings.TrimSpace(p)
	switch {
	case r != "" && p != "":
		return fleetServer{}, usagef("--%s and --%s both given: a fleet shares one server, Redis or PostgreSQL", flagRedisURL, flagPostgresURL)
	case p != "":
		return fleetServer{url: p, flag: flagPostgresURL, env: envPostgresURL, postgres: true}, nil
	default:
		return fleetServer{url: r, flag: flagRedisURL, env: envRedisURL}, nil
	}
}

// inFleet reports whether the command runs in a fleet (ignoring a
// --redis-url/--postgres-url conflict, reported where the transport is
// built).
func (a *app) inFleet() bool {
	f, err := a.fleet()
	return err != nil || f.url != ""
}

// fleetTransport builds the transport through broker.New with the shared
// budget: New reaches the fleet's server first and refuses to start
// without it. The shared budget replaces any other limiter in opts.
func (a *app) fleetTransport(f fleetServer, v *venueConfig, opts transport.Config) (*transport.Client, error) {
	log, err := a.logger()
	if err != nil {
		return nil, err
	}
	// opts carry the CLI's clock and rate limit (RatePerMinute and Burst,
	// which sets the shared budget's).
	cfg := broker.Config{APIKey: v.apiKey, PrivateKey: v.key, BaseURL: v.baseURL,
		Logger: log, Transport: opts, AccountNumber: a.accountNumberFlag()}
	if f.postgres {
		cfg.PostgresURL = f.url
	} else {
		cfg.RedisURL = f.url
	}
	c, err := broker.New(cfg)
	if err != nil {
		return nil, setupError(f.redact(err.Error()), err)
	}
	a.closers = append(a.closers, c.Close)
	return c.Transport(), nil
}

// fleetStore opens the intent store the fleet shares on its server for
// account.
func (a *app) fleetStore(ctx context.Context, f fleetServer, account string) (idempotency.Store, error) {
	var s idempotency.Store
	var err error
	if f.postgres {
		s, err = pgstore.Open(ctx, f.url, account, pgstore.Config{Clock: a.clock()})
	} else {
		s, err = redisstore.Open(ctx, f.url, account, redisstore.Config{Clock: a.clock()})
	}
	if err != nil {
		return nil, setupError(fmt.Sprintf("--%s: %s", f.flag, f.redact(err.Error())), err)
	}
	return s, nil
}

// quietRedis keeps the Redis client's own logging off stderr, which
// carries one line on failure and nothing else.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
