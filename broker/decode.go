package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tradewire/tradewire/internal/wire"
)

// Decoding the venue's answers. Broker's read types have no JSON methods
// (the CLI gives them its output shape). What the venue sends is decoded into the unexported wire struct of each type
// (wireAccount, wireOrder, …: the venue's field names, money as strings or
// numbers) and converted; listings, the fee sweep, order reads and the
// Codec package orders reads created orders with all decode this way.

// venueRow is a venue wire struct that converts to the read type T.
type venueRow[T any] interface{ value() T }

// strictRow is a venue wire struct that also checks the JSON it was
// decoded from (wireOrder: an answer that contradicts itself is refused).
type strictRow interface{ checkJSON(raw []byte) error }

// unmarshal decodes one venue object into v and, when v is a strictRow,
// checks it.
func unmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	if s, ok := v.(strictRow); ok {
		return s.checkJSON(b)
	}
	return nil
}

// decodeAs decodes one venue object of wire shape W and converts it.
func decodeAs[W venueRow[T], T any](b []byte) (T, error) {
	var w W
	if err := unmarshal(b, &w); err != nil {
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
	if err := unmarshal(body, v); err != nil {
		return &decodeError{Path: pathOf(target), Err: err}
	}
	return nil
}

// checkKeys reports the first key that makes a JSON document contradict
// itself: a key repeated within one object, at any depth, or a key that
// differs only in case from a name in known (encoding/json would read
// either into the field and keep the last). raw must be valid JSON: the
// caller decodes it first.
func checkKeys(raw []byte, known map[string]bool) error {
	var keyBuf [64][]byte
	var startBuf [16]int
	keys := keyBuf[:0]     // the keys of every open object, outermost first
	starts := startBuf[:0] // per open object or array: where its keys begin, -1 for an array
	expectKey := false
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			starts = append(starts, len(keys))
			expectKey = true
		case '[':
			starts = append(starts, -1)
			expectKey = false
		case '}', ']':
			if n := len(starts); n > 0 {
				if s := starts[n-1]; s >= 0 {
					keys = keys[:s]
				}
				starts = starts[:n-1]
			}
			expectKey = false
		case ',':
			expectKey = len(starts) > 0 && starts[len(starts)-1] >= 0
		case ':':
			expectKey = false
		case '"':
			j, escaped := i+1, false
			for ; j < len(raw) && raw[j] != '"'; j++ {
				if raw[j] == '\\' {
					escaped = true
					j++
				}
			}
			if j >= len(raw) {
				return errors.New("a string is not closed")
			}
			if expectKey {
				key := raw[i+1 : j]
				if escaped {
					var s string
					if err := json.Unmarshal(raw[i:j+1], &s); err != nil {
						return err
					}
					key = []byte(s)
				}
				if err := checkKey(key, keys[starts[len(starts)-1]:], known); err != nil {
					return err
				}
				keys = append(keys, key)
			}
			expectKey = false
			i = j
		}
	}
	return nil
}

// checkKey refuses key if its object already has it, or if it differs
// only in case from a known name.
func checkKey(key []byte, siblings [][]byte, known map[string]bool) error {
	for _, k := range siblings {
		if bytes.Equal(k, key) {
			return fmt.Errorf("key %q appears twice in one object", wire.Clip(string(key)))
		}
	}
	if known[string(key)] {
		return nil
	}
	for name := range known {
		if bytes.EqualFold([]byte(name), key) {
			return fmt.Errorf("key %q differs only in case from %q", wire.Clip(string(key)), name)
		}
	}
	return nil
}
