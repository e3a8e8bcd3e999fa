package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/venue"
)

// simExternalSymbol is the pair "sim serve --external-every" places on.
const simExternalSymbol = "BTC-USD"

// placeSimExternal places the n-th order of "sim serve --external-every"
// in v's account as another tool would (venue.Venue.PlaceExternal, with a
// client_order_id the venue draws): a $20 limit order on BTC-USD, a buy
// at the bid when n is even, a sell at the ask when odd, so that it rests
// and fills, in parts, as the market moves through its price.
func placeSimExternal(v *venue.Venue, n int) (venue.OrderRecord, error) {
	bid, ask, err := v.Quote(simExternalSymbol)
	if err != nil {
		return venue.OrderRecord{}, err
	}
	side, price := "buy", bid
	if n%2 == 1 {
		side, price = "sell", ask
	}
	body := fmt.Sprintf(`{"side":%q,"type":"limit","symbol":%q,"limit_order_config":{"quote_amount":"20.00","limit_price":%q,"time_in_force":"gtc"}}`,
		side, simExternalSymbol, price.String())
	return v.PlaceExternal([]byte(body))
}

// placeSimExternalEvery places an order with placeSimExternal every
// interval on clk, reporting each on stderr, until the returned func is
// called. A refused one is reported, and the next is placed on time.
func (a *app) placeSimExternalEvery(v *venue.Venue, every time.Duration, clk clockwork.Clock) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	tick := clk.NewTicker(every)
	go func() {
		defer close(exited)
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			case <-tick.Chan():
			}
			o, err := placeSimExternal(v, n)
			if err != nil {
				fmt.Fprintf(a.opts.Stderr, "sim serve: external order not placed: %s\n", strings.TrimPrefix(err.Error(), "venue: "))
				continue
			}
			fmt.Fprintf(a.opts.Stderr, "sim serve: external order %s placed (client_order_id %s, %s %s %s)\n",
				o.ID, o.ClientOrderID, o.Side, o.Type, o.Symbol)
		}
	}()
	return func() {
		tick.Stop()
		close(done)
		<-exited
	}
}

// syncWriter serializes writes to w: "sim serve" writes its stderr from
// its background goroutines too.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
