package idempotency_test

import (
	"fmt"

	"github.com/tradewire/tradewire/idempotency"
)

// The same key gives the same client_order_id in every process, forever;
// a namespace (such as a strategy name) keeps two strategies' keys apart.
func ExampleClientOrderID() {
	fmt.Println(idempotency.ClientOrderID("AB1234567890", "", "order-1"))
	fmt.Println(idempotency.ClientOrderID("AB1234567890", "momentum", "order-1"))
	// Output:
	// ae6ec0cf-288b-51fc-ba4f-34c2c5b23ed0
	// f9397ab5-64af-5a48-96ff-94db4323928a
}
