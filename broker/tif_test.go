package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
)

// TestGoodForDayExpiresAtVenueEndOfDay: a gfd limit order placed through
// the facade that does not fill is open 1 ns before the venue's end of day
// (00:00 UTC) and canceled at it, with updated_at the expiry; a gtc order
// placed beside it stays open.
func TestGoodForDayExpiresAtVenueEndOfDay(t *testing.T) {
	t.Parallel()
	c, _, _, clk := placing(t)
	ctx := context.Background()
	start := clk.Now() // 2026-11-29 12:00 UTC
	endOfDay := time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, time.UTC)

	gfd := limitBuy()
	gfd.TimeInForce = broker.TimeInForceGFD
	day, err := c.Place(ctx, "gfd", gfd)
	if err != nil || day.State != broker.StateOpen {
		t.Fatalf("Place gfd = %+v, %v", day, err)
	}
	gtc, err := c.Place(ctx, "gtc", limitBuy())
	if err != nil || gtc.State != broker.StateOpen {
		t.Fatalf("Place gtc = %+v, %v", gtc, err)
	}

	clk.Advance(endOfDay.Add(-time.Nanosecond).Sub(clk.Now()))
	if o, err := c.Order(ctx, day.ID); err != nil || o.State != broker.StateOpen {
		t.Fatalf("1 ns before the end of day: %+v, %v; want open", o, err)
	}
	clk.Advance(time.Nanosecond)
	o, err := c.Order(ctx, day.ID)
	if err != nil || o.State != broker.StateCanceled || !o.UpdatedAt.Equal(endOfDay) {
		t.Fatalf("at the end of day: %+v, %v; want canceled, updated_at %v", o, err, endOfDay)
	}
	if len(o.Executions) != 0 || !o.FilledAssetQuantity.IsZero() {
		t.Errorf("the expired order filled: %+v", o.Executions)
	}
	if o, err := c.Order(ctx, gtc.ID); err != nil || o.State != broker.StateOpen {
		t.Errorf("gtc at the end of day: %+v, %v; want open", o, err)
	}
	// The list agrees with the order.
	var canceled []string
	for o, err := range c.Orders(ctx, broker.OrderFilter{State: broker.StateCanceled}) {
		if err != nil {
			t.Fatal(err)
		}
		canceled = append(canceled, o.ID)
	}
	if len(canceled) != 1 || canceled[0] != day.ID {
		t.Errorf("canceled orders = %v; want the gfd order %s", canceled, day.ID)
	}
}

// TestTimeInForceRefusedOffline: a time in force the venue does not
// document, or one on a market order, is refused before anything is sent.
func TestTimeInForceRefusedOffline(t *testing.T) {
	t.Parallel()
	c, srv, _, _ := placing(t)
	ctx := context.Background()
	ioc := limitBuy()
	ioc.TimeInForce = "ioc"
	market := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket,
		AssetQuantity: limitBuy().AssetQuantity, TimeInForce: broker.TimeInForceGFD}
	for name, req := range map[string]broker.OrderRequest{"ioc": ioc, "market gfd": market} {
		var ae *broker.ArgumentError
		if _, err := c.Place(ctx, name, req); !errors.As(err, &ae) || ae.Field != "time_in_force" {
			t.Errorf("Place %s: %v, want an *ArgumentError on time_in_force", name, err)
		}
		if _, err := c.Preview(ctx, req); !errors.As(err, &ae) || ae.Field != "time_in_force" {
			t.Errorf("Preview %s: %v, want an *ArgumentError on time_in_force", name, err)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Errorf("%d requests reached the venue", n)
	}
}
