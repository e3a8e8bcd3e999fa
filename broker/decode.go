package broker

import (
	"encoding/json"
)

// Decoding the venue's answers. Broker's read types have no UnmarshalJSON:
// their JSON is tradewire's output shape (MarshalJSON, json.go). What the
// venue sends is decoded into the unexported wire struct of each type
// (wireAccount, wireOrder, …: the venue's field names, money as strings or
// numbers) and converted; listings, the fee sweep, order reads and the
// Codec package orders reads created orders with all decode this way.

// venueRow is a venue wire struct that converts to the read type T.
type venueRow[T any] interface{ value() T }

// decodeAs decodes one venue object of wire shape W and converts it.
func decodeAs[W venueRow[T], T any](b []byte) (T, error) {
	var w W
	if err := json.Unmarshal(b, &w); err != nil {
		var zero T
		return zero, err
	}
	return w.value(), nil
}

// values converts venue wire rows.
func values[T any, W venueRow[T]](ws []W) []T {
	if ws == nil {
		return nil
	}
	out := make([]T, len(ws))
	for i, w := range ws {
		out[i] = w.value()
	}
	return out
}

// decodeBody decodes a 2xx body into v, naming the request on failure.
func decodeBody(target string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &DecodeError{Path: pathOf(target), Err: err}
	}
	return nil
}
