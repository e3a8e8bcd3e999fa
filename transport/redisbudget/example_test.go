package redisbudget_test

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/redisbudget"
)

// Every bot process of a fleet builds its client on the same Redis budget.
// A Redis that does not answer stops the bot at start-up.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	budget, err := redisbudget.New(ctx, rdb, "AB1234567890",
		redisbudget.Config{}) // the venue's budget, 100 a minute and 300, shared
	if err != nil {
		log.Fatal(err)
	}
	var signer *signing.Signer // from the account's key
	tc, err := transport.New("https://trading.robinhood.com", signer, transport.Config{Limiter: budget})
	if err != nil {
		log.Fatal(err)
	}
	_ = tc
}
