package pgstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
)

// Open a fleet's store on a primary and its synchronous standby, and say
// whether it vouches that a new intent is new.
func ExampleOpen() {
	ctx := context.Background()
	url := "postgres://bot:PASSWORD@db1:5432,db2:5432/trade?target_session_attrs=read-write"
	store, err := pgstore.Open(ctx, url, "ACCOUNT1", pgstore.Config{})
	if err != nil {
		log.Fatal(err) // matches transport.ErrUnavailable when no primary answers
	}
	defer store.Close()
	g, _ := pgstore.GuaranteeOf(store)
	fmt.Println("guarantee:", g, "vouches:", store.(idempotency.Witness).VouchesNew())
}
