package broker

import (
	"encoding/json"
)

// decodeBody decodes a 2xx body into v, naming the request on failure.
func decodeBody(target string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &DecodeError{Path: pathOf(target), Err: err}
	}
	return nil
}
