package orders

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/transport"
)

// TimeInForce is how long an order stays open. The venue documents only
// TimeInForceGTC.
type TimeInForce string

// TimeInForceGTC: good till canceled.
const TimeInForceGTC TimeInForce = "gtc"

// Request is an order to place. Exactly one of AssetQuantity and
// QuoteAmount sizes it (a zero value is "not given"); LimitPrice and
// StopPrice are given exactly for the types that take them. The zero
// Request is invalid.
type Request struct {
	Symbol        string // such as "BTC-USD"
	Side          Side
	Type          Type
	AssetQuantity decimal.Decimal
	QuoteAmount   decimal.Decimal
	LimitPrice    decimal.Decimal // limit and stop_limit
	StopPrice     decimal.Decimal // stop_loss and stop_limit
	// TimeInForce applies to limit and stop orders; empty means gtc.
	TimeInForce TimeInForce
}

// ValidationError is a Request refused before anything was sent. Field is
// the venue's name for the field ("symbol", "asset_quantity", …). It
// matches transport.ErrInvalidRequest.
type ValidationError struct {
	Field  string
	Reason string
}

// Error implements error.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("orders: invalid request: %s: %s (nothing was sent)", e.Field, e.Reason)
}

// Is matches transport.ErrInvalidRequest.
func (e *ValidationError) Is(target error) bool { return target == transport.ErrInvalidRequest }

// Validate checks the request offline and returns the first problem as a
// *ValidationError. Every decimal has at most 18 decimal places and 20
// digits before the point (trailing zeros aside), so that the body holds
// it exactly in plain notation.
func (r Request) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !wire.ValidSymbol(r.Symbol) {
		return bad("symbol", "%q is not an upper-case pair such as BTC-USD", r.Symbol)
	}
	if r.Side != SideBuy && r.Side != SideSell {
		return bad("side", "%q: want buy or sell", r.Side)
	}
	for _, f := range []struct {
		field string
		d     decimal.Decimal
	}{{"asset_quantity", r.AssetQuantity}, {"quote_amount", r.QuoteAmount}, {"limit_price", r.LimitPrice}, {"stop_price", r.StopPrice}} {
		if err := wire.CheckAmount(f.field, f.d); err != nil {
			var ae *wire.AmountError
			errors.As(err, &ae)
			return bad(f.field, "%s", ae.Reason)
		}
	}
	hasQty, hasQuote := !r.AssetQuantity.IsZero(), !r.QuoteAmount.IsZero()
	switch {
	case hasQty && hasQuote:
		return bad("asset_quantity", "give exactly one of asset_quantity and quote_amount, not both")
	case !hasQty && !hasQuote:
		return bad("asset_quantity", "give exactly one of asset_quantity and quote_amount")
	case hasQty && !r.AssetQuantity.IsPositive():
		return bad("asset_quantity", "%s: must be positive", r.AssetQuantity)
	case hasQuote && !r.QuoteAmount.IsPositive():
		return bad("quote_amount", "%s: must be positive", r.QuoteAmount)
	}
	needLimit, needStop := false, false
	switch r.Type {
	case TypeMarket:
		if hasQuote {
			return bad("quote_amount", "market orders are sized only by asset_quantity")
		}
	case TypeLimit:
		needLimit = true
	case TypeStopLoss:
		needStop = true
	case TypeStopLimit:
		needLimit, needStop = true, true
	default:
		return bad("type", "%q: want market, limit, stop_loss or stop_limit", r.Type)
	}
	if err := price("limit_price", r.LimitPrice, needLimit, r.Type); err != nil {
		return err
	}
	if err := price("stop_price", r.StopPrice, needStop, r.Type); err != nil {
		return err
	}
	switch {
	case r.TimeInForce == "" || r.TimeInForce == TimeInForceGTC:
	default:
		return bad("time_in_force", "%q: the venue documents only gtc", r.TimeInForce)
	}
	if r.Type == TypeMarket && r.TimeInForce != "" {
		return bad("time_in_force", "market orders take no time_in_force")
	}
	return nil
}

func price(field string, d decimal.Decimal, need bool, typ Type) error {
	switch {
	case need && d.IsZero():
		return &ValidationError{Field: field, Reason: fmt.Sprintf("%s orders need one", typ)}
	case !need && !d.IsZero():
		return &ValidationError{Field: field, Reason: fmt.Sprintf("%s orders take none", typ)}
	case need && !d.IsPositive():
		return &ValidationError{Field: field, Reason: fmt.Sprintf("%s: must be positive", d)}
	}
	return nil
}

// wireConfig is the <type>_order_config object, in a fixed field order.
type wireConfig struct {
	AssetQuantity string `json:"asset_quantity,omitempty"`
	QuoteAmount   string `json:"quote_amount,omitempty"`
	LimitPrice    string `json:"limit_price,omitempty"`
	StopPrice     string `json:"stop_price,omitempty"`
	TimeInForce   string `json:"time_in_force,omitempty"`
}

// plain writes a decimal as the venue wants it: fixed-point, never an
// exponent form.
func plain(d decimal.Decimal) string {
	if d.IsZero() {
		return ""
	}
	return d.String()
}

// Body returns the create's JSON for clientOrderID: the same request always
// gives the same bytes. The request must be valid.
func (r Request) Body(clientOrderID string) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	cfg := &wireConfig{
		AssetQuantity: plain(r.AssetQuantity),
		QuoteAmount:   plain(r.QuoteAmount),
		LimitPrice:    plain(r.LimitPrice),
		StopPrice:     plain(r.StopPrice),
	}
	if r.Type != TypeMarket {
		cfg.TimeInForce = string(TimeInForceGTC)
	}
	w := struct {
		ClientOrderID string      `json:"client_order_id"`
		Side          Side        `json:"side"`
		Type          Type        `json:"type"`
		Symbol        string      `json:"symbol"`
		Market        *wireConfig `json:"market_order_config,omitempty"`
		Limit         *wireConfig `json:"limit_order_config,omitempty"`
		StopLoss      *wireConfig `json:"stop_loss_order_config,omitempty"`
		StopLimit     *wireConfig `json:"stop_limit_order_config,omitempty"`
	}{ClientOrderID: clientOrderID, Side: r.Side, Type: r.Type, Symbol: r.Symbol}
	switch r.Type {
	case TypeMarket:
		w.Market = cfg
	case TypeLimit:
		w.Limit = cfg
	case TypeStopLoss:
		w.StopLoss = cfg
	case TypeStopLimit:
		w.StopLimit = cfg
	}
	return json.Marshal(w)
}

// fingerprint identifies a request: a key names one request only.
func fingerprint(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
