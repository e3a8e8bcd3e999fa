package pgbudget_test

import (
	"context"
	"log"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/pgbudget"
)

// Every bot process of a fleet builds its client on the same budget in
// PostgreSQL. A server that does not answer stops the bot at start-up.
func Example() {
	ctx := context.Background()
	budget, err := pgbudget.Open(ctx,
		"postgres://bot:secret@db1:5432,db2:5432/trade?target_session_attrs=read-write",
		"AB1234567890",
		pgbudget.Config{}) // the venue's budget, 100 a minute and 300, shared
	if err != nil {
		log.Fatal(err) // matches transport.ErrUnavailable when no server answered
	}
	defer budget.Close()
	var signer *signing.Signer // from the account's key
	tc, err := transport.New("https://trading.robinhood.com", signer, transport.Config{Limiter: budget})
	if err != nil {
		log.Fatal(err)
	}
	_ = tc
}
