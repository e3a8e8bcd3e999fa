package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/tradewire/tradewire/idempotency"
)

// GetMeta implements idempotency.Meta: one SELECT.
func (s *store) GetMeta(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errors.New("pgstore: a named value needs a name")
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	ctx, cancel := s.pool.Bound(ctx)
	defer cancel()
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM tradewire_intent_meta WHERE account = $1 AND name = $2`, s.account, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, idempotency.ErrNotFound
	}
	if err != nil {
		return nil, s.pool.Err(err, "pgstore: reading %s", name)
	}
	return v, nil
}

// PutMeta implements idempotency.Meta: committed (on the synchronous
// standby, when there is one) before it returns, as a claim is.
func (s *store) PutMeta(ctx context.Context, name string, value []byte) error {
	if name == "" {
		return errors.New("pgstore: a named value needs a name")
	}
	if err := s.usable(); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	ctx, cancel := s.pool.Bound(ctx)
	defer cancel()
	_, err := s.pool.Exec(ctx, `INSERT INTO tradewire_intent_meta (account, name, value) VALUES ($1, $2, $3)
		ON CONFLICT (account, name) DO UPDATE SET value = EXCLUDED.value`, s.account, name, value)
	return s.pool.Err(err, "pgstore: writing %s", name)
}
