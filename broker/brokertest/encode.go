package brokertest

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// The venue's hottest answers (an order, a page of orders, the best bid
// and ask) are written by the append-style encoders below rather than by
// encoding/json's reflection. Each writes exactly the bytes json.Marshal
// writes for the same value (field order, omitempty, HTML escaping of
// strings, compact output); encode_test.go holds them to it. Any other
// value goes through json.Marshal.

// appendFast appends v's JSON to b when v is a type the encoders know,
// reporting whether it did.
func appendFast(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case orderJSON:
		return x.appendJSON(slices.Grow(b, orderJSONSize)), true
	case pageJSON:
		return x.appendJSON(b)
	case bbaPage:
		return x.appendJSON(b), true
	}
	return b, false
}

// appendJSONString appends s as encoding/json writes a string: quoted,
// with <, > and & escaped. Strings with bytes outside ASCII go through
// json.Marshal, which also replaces invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			m, _ := json.Marshal(s)
			return append(b, m...)
		}
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendNum appends a decimal as num.MarshalJSON writes it.
func appendNum(b []byte, d decimal.Decimal) []byte {
	s := d.String()
	b = append(b, s...)
	if !strings.Contains(s, ".") {
		b = append(b, ".0"...)
	}
	return b
}

// appendField appends a comma unless first, then the quoted key and a
// colon. Keys are plain ASCII without characters to escape.
func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func (c *configJSON) appendJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	for _, f := range [...]struct{ k, v string }{
		{"asset_quantity", c.AssetQuantity}, {"quote_amount", c.QuoteAmount}, {"limit_price", c.LimitPrice},
		{"stop_price", c.StopPrice}, {"time_in_force", c.TimeInForce},
	} {
		if f.v == "" {
			continue
		}
		b = appendKey(b, f.k, first)
		b = appendJSONString(b, f.v)
		first = false
	}
	return append(b, '}')
}

// orderJSONSize is about the length of an order's JSON, and a little more.
const orderJSONSize = 768

func (j *orderJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"symbol":`...)
	b = appendJSONString(b, j.Symbol)
	b = append(b, `,"client_order_id":`...)
	b = appendJSONString(b, j.ClientOrderID)
	b = append(b, `,"side":`...)
	b = appendJSONString(b, j.Side)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, j.Type)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, j.ID)
	b = append(b, `,"account_number":`...)
	b = appendJSONString(b, j.AccountNumber)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, j.State)
	b = append(b, `,"filled_asset_quantity":`...)
	b = appendJSONString(b, j.FilledAssetQuantity)
	b = append(b, `,"executions":`...)
	b = appendArray(b, j.Executions, func(b []byte, e execJSON) []byte {
		b = append(b, `{"effective_price":`...)
		b = appendJSONString(b, e.EffectivePrice)
		b = append(b, `,"quantity":`...)
		b = appendJSONString(b, e.Quantity)
		b = append(b, `,"timestamp":`...)
		b = appendJSONString(b, e.Timestamp)
		return append(b, '}')
	})
	b = append(b, `,"average_price":`...)
	if j.AveragePrice == nil {
		b = append(b, "null"...)
	} else {
		b = appendNum(b, decimal.Decimal(*j.AveragePrice))
	}
	b = append(b, `,"created_at":`...)
	b = appendJSONString(b, j.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = appendJSONString(b, j.UpdatedAt)
	b = append(b, `,"fee_charged":`...)
	b = appendNum(b, decimal.Decimal(j.FeeCharged))
	b = append(b, `,"estimated_fee_remaining":`...)
	b = appendNum(b, decimal.Decimal(j.EstimatedFeeRemaining))
	for _, c := range [...]struct {
		k string
		c *configJSON
	}{{"market_order_config", j.Market}, {"limit_order_config", j.Limit},
		{"stop_loss_order_config", j.StopLoss}, {"stop_limit_order_config", j.StopLimit}} {
		if c.c != nil {
			b = appendKey(b, c.k, false)
			b = c.c.appendJSON(b)
		}
	}
	return append(b, '}')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendJSON appends a page whose results are orders (or orders already
// encoded, as json.RawMessage), holdings, trading pairs or accounts,
// reporting false for any other results.
func (p pageJSON) appendJSON(b []byte) ([]byte, bool) {
	var res []any
	switch x := p.Results.(type) {
	case []any:
		res = x
	case []accountJSON:
		if x == nil {
			return b, false
		}
		res = make([]any, len(x))
		for i, a := range x {
			res[i] = a
		}
	default:
		return b, false
	}
	start := len(b)
	b = slices.Grow(b, 256+orderJSONSize*len(res)) // one allocation for a page
	b = append(b, `{"next":`...)
	b = appendOptString(b, p.Next)
	b = append(b, `,"previous":`...)
	b = appendOptString(b, p.Previous)
	b = append(b, `,"results":`...)
	if res == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range res {
			if i > 0 {
				b = append(b, ',')
			}
			switch x := r.(type) {
			case orderJSON:
				b = x.appendJSON(b)
			case holdingJSON:
				b = x.appendJSON(b)
			case pairJSON:
				b = x.appendJSON(b)
			case accountJSON:
				b = x.appendJSON(b)
			case json.RawMessage:
				// As json.Marshal does for a RawMessage: compact and valid.
				if !json.Valid(x) || strings.ContainsAny(string(x), " \t\r\n<>&") {
					return b[:start], false
				}
				b = append(b, x...)
			default:
				return b[:start], false
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// bbaPage is the best bid/ask answer: its results alone.
type bbaPage struct {
	Results []bbaJSON `json:"results"`
}

func (p bbaPage) appendJSON(b []byte) []byte {
	b = slices.Grow(b, 16+128*len(p.Results))
	b = append(b, `{"results":`...)
	b = appendArray(b, p.Results, func(b []byte, q bbaJSON) []byte {
		b = append(b, `{"symbol":`...)
		b = appendJSONString(b, q.Symbol)
		b = append(b, `,"timestamp":`...)
		b = appendJSONString(b, q.Timestamp)
		b = append(b, `,"bid":`...)
		b = appendJSONString(b, q.Bid)
		b = append(b, `,"ask":`...)
		b = appendJSONString(b, q.Ask)
		return append(b, '}')
	})
	return append(b, '}')
}

// appendArray appends xs as json.Marshal writes a slice: null when nil,
// else its elements, each appended by each, in brackets.
func appendArray[T any](b []byte, xs []T, each func([]byte, T) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, x)
	}
	return append(b, ']')
}

func (h holdingJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"account_number":`...)
	b = appendJSONString(b, h.AccountNumber)
	b = append(b, `,"asset_code":`...)
	b = appendJSONString(b, h.AssetCode)
	b = append(b, `,"total_quantity":`...)
	b = appendNum(b, decimal.Decimal(h.TotalQuantity))
	b = append(b, `,"quantity_available_for_trading":`...)
	b = appendNum(b, decimal.Decimal(h.QuantityAvailableForTrading))
	return append(b, '}')
}

func (p pairJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"symbol":`...)
	b = appendJSONString(b, p.Symbol)
	b = append(b, `,"asset_code":`...)
	b = appendJSONString(b, p.AssetCode)
	b = append(b, `,"quote_code":`...)
	b = appendJSONString(b, p.QuoteCode)
	b = append(b, `,"asset_increment":`...)
	b = appendJSONString(b, p.AssetIncrement)
	b = append(b, `,"quote_increment":`...)
	b = appendJSONString(b, p.QuoteIncrement)
	b = append(b, `,"max_order_size":`...)
	b = appendJSONString(b, p.MaxOrderSize)
	if p.MinOrderAmount != "" {
		b = append(b, `,"min_order_amount":`...)
		b = appendJSONString(b, p.MinOrderAmount)
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, p.Status)
	b = append(b, `,"is_api_tradable":`...)
	b = strconv.AppendBool(b, p.IsAPITradable)
	return append(b, '}')
}

func appendOptNum(b []byte, n *num) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return appendNum(b, decimal.Decimal(*n))
}

func (a accountJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"account_number":`...)
	b = appendJSONString(b, a.AccountNumber)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, a.Status)
	b = append(b, `,"buying_power":`...)
	b = appendJSONString(b, a.BuyingPower)
	b = append(b, `,"buying_power_currency":`...)
	b = appendJSONString(b, a.BuyingPowerCurrency)
	b = append(b, `,"account_type":`...)
	b = appendJSONString(b, a.AccountType)
	b = append(b, `,"is_api_tradable":`...)
	b = strconv.AppendBool(b, a.IsAPITradable)
	ft := &a.FeeTierStatus
	b = append(b, `,"fee_tier_status":{"fee_ratio":`...)
	b = appendNum(b, decimal.Decimal(ft.FeeRatio))
	b = append(b, `,"thirty_day_volume":`...)
	b = appendNum(b, decimal.Decimal(ft.ThirtyDayVolume))
	b = append(b, `,"next_fee_tier_ratio":`...)
	b = appendOptNum(b, ft.NextFeeTierRatio)
	b = append(b, `,"next_fee_tier_threshold":`...)
	b = appendOptNum(b, ft.NextFeeTierThreshold)
	return append(b, "}}"...)
}
