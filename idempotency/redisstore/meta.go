package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/idempotency"
)

var _ idempotency.Meta = (*store)(nil)

// The named values of idempotency.Meta are one hash per account,
// tradewire:{ACCOUNT}:meta, field = name. No script that deletes intents
// touches it.
func (s *store) metaKey() string { return s.ns + "meta" }

// metaScript writes a named value, under the generation guard, so that a
// Redis that lost the account's intents refuses it as it refuses a claim.
// KEYS: meta, generation. ARGV: generation id, last seq, name, value.
// Replies, besides guard's: {1, seq}.
var metaScript = redis.NewScript(`local G = KEYS[2]` + guard + `
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
wrote()
return {1, seq}
`)

// GetMeta implements idempotency.Meta: one HGET.
func (s *store) GetMeta(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("redisstore: a named value needs a name")
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	v, err := s.rdb.HGet(ctx, s.metaKey(), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, idempotency.ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err, "redisstore: reading %s", name)
	}
	return v, nil
}

// PutMeta implements idempotency.Meta: durable, and acknowledged by the
// replicas, as a claim is.
func (s *store) PutMeta(ctx context.Context, name string, value []byte) error {
	if name == "" {
		return errors.New("redisstore: a named value needs a name")
	}
	if err := s.usable(); err != nil {
		return err
	}
	_, err := s.guarded(ctx, "writing "+name, metaScript, []string{s.metaKey(), s.genKey}, name, string(value))
	return err
}
