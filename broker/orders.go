package broker

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/transport"
)

// OrderFilter narrows Orders. The zero value lists every order. Side,
// State and Type must be values this package names (StateOpen, …); zero
// fields are left out of the query; the time bounds go out in UTC RFC 3339
// with microseconds, the start rounded down and the end rounded up, so the
// window never shrinks.
type OrderFilter struct {
	Symbol string
	ID     string // an order id (UUID)
	Side   Side
	State  OrderState
	Type   OrderType

	CreatedAtStart, CreatedAtEnd time.Time
	UpdatedAtStart, UpdatedAtEnd time.Time
}

// Validate checks the filter offline, as Orders does before sending, and
// returns the first problem as an *ArgumentError naming the field. It lets
// a caller refuse a bad filter before it builds a client.
func (f OrderFilter) Validate() error {
	_, err := f.query("A")
	return err
}

// query returns the filter's query with account_number, encoded once in
// url.Values' sorted-key order, or an *ArgumentError naming the field.
func (f OrderFilter) query(account string) (string, error) {
	q := url.Values{"account_number": {account}}
	if f.Symbol != "" {
		if err := checkSymbol("symbol", f.Symbol); err != nil {
			return "", err
		}
		q.Set("symbol", f.Symbol)
	}
	if f.ID != "" {
		if err := checkOrderID("id", f.ID); err != nil {
			return "", err
		}
		q.Set("id", f.ID)
	}
	if f.Side != "" {
		if f.Side != SideBuy && f.Side != SideSell {
			return "", &ArgumentError{Field: "side", Value: string(f.Side), Reason: "must be buy or sell"}
		}
		q.Set("side", string(f.Side))
	}
	if f.State != "" {
		if !slices.Contains(filterStates, f.State) {
			return "", &ArgumentError{Field: "state", Value: wire.Clip(string(f.State)), Reason: "must be " + oneOf(filterStates)}
		}
		q.Set("state", string(f.State))
	}
	if f.Type != "" {
		if !slices.Contains(filterTypes, f.Type) {
			return "", &ArgumentError{Field: "type", Value: wire.Clip(string(f.Type)), Reason: "must be " + oneOf(filterTypes)}
		}
		q.Set("type", string(f.Type))
	}
	setTime := func(key string, t time.Time, up bool) {
		if t.IsZero() {
			return
		}
		t = t.UTC()
		if tr := t.Truncate(time.Microsecond); up && !tr.Equal(t) {
			t = tr.Add(time.Microsecond)
		} else {
			t = tr
		}
		q.Set(key, t.Format("2006-01-02T15:04:05.999999Z07:00"))
	}
	setTime("created_at_start", f.CreatedAtStart, false)
	setTime("created_at_end", f.CreatedAtEnd, true)
	setTime("updated_at_start", f.UpdatedAtStart, false)
	setTime("updated_at_end", f.UpdatedAtEnd, true)
	return q.Encode(), nil
}

// The values the orders list takes for its state and type filters; the
// venue answers any other with a 400, so they are refused before sending.
var (
	filterStates = []OrderState{StateOpen, StatePending, StatePartiallyFilled, StateFilled, StateCanceled, StateFailed}
	filterTypes  = []OrderType{TypeMarket, TypeLimit, TypeStopLoss, TypeStopLimit}
)

// oneOf lists values as "a, b or c".
func oneOf[T ~string](vs []T) string {
	var b strings.Builder
	for i, v := range vs {
		switch {
		case i == 0:
		case i == len(vs)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}

// checkOrderID accepts only the canonical 36-character UUID form, so an id
// can go into a path unescaped.
func checkOrderID(field, id string) error {
	if len(id) != 36 || uuid.Validate(id) != nil {
		return &ArgumentError{Field: field, Value: wire.Clip(id), Reason: "must be a UUID like 6a8738ba-836d-4afd-abd8-483d7e4d01c9"}
	}
	return nil
}

// Orders lists the account's orders matching f, newest first as the venue
// sends them, fetching pages lazily as the loop asks for items. Collect
// reads them all. An invalid filter is refused before anything is sent.
func (c *Client) Orders(ctx context.Context, f OrderFilter, opts ...Paging) iter.Seq2[Order, error] {
	cc, err := c.listConfig(opts)
	if err != nil {
		return errSeq[Order](err)
	}
	if err := f.Validate(); err != nil {
		return errSeq[Order](err)
	}
	return c.orders(ctx, f, cc)
}

func (c *Client) orders(ctx context.Context, f OrderFilter, cc callConfig) iter.Seq2[Order, error] {
	return paginate[wireOrder](ctx, c, cc, func(ctx context.Context) (string, error) {
		n, err := c.accountNumber(ctx)
		if err != nil {
			return "", err
		}
		q, err := f.query(n)
		if err != nil {
			return "", err
		}
		return pathOrders + "?" + q, nil
	})
}

// Order reads one order. When the venue answers 404 the error matches
// ErrNoSuchOrder (and transport.ErrNotFound, and unwraps to the
// *transport.StatusError); every other failure is an ordinary error.
func (c *Client) Order(ctx context.Context, id string) (*Order, error) {
	if err := checkOrderID("order_id", id); err != nil {
		return nil, err
	}
	n, err := c.accountNumber(ctx)
	if err != nil {
		return nil, err
	}
	target := pathOrders + id + "/?" + url.Values{"account_number": {n}}.Encode()
	var w wireOrder
	if err := c.getJSON(ctx, target, &w); err != nil {
		return nil, orderError(id, err)
	}
	o := w.value()
	return &o, nil
}

func cancelError(id string, err error) error {
	var se *transport.StatusError
	if errors.As(err, &se) && errors.Is(se, transport.ErrRejected) && !errors.Is(err, transport.ErrUnknownOutcome) {
		return fmt.Errorf("broker: cancel order %s rejected: %w", id, err)
	}
	return orderError(id, err)
}

func orderError(id string, err error) error {
	var se *transport.StatusError
	if errors.As(err, &se) && errors.Is(se, transport.ErrNotFound) && !errors.Is(err, transport.ErrUnknownOutcome) {
		return fmt.Errorf("broker: order %s: %w: %w", id, ErrNoSuchOrder, err)
	}
	return err
}
