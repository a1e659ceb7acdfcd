package repo

import (
	"bytes"
	"encoding/json"
)

// decodeObject reads a stored JSON object column. Numbers stay json.Number so that
// a large integer a client stored comes back digit for digit, not as a float.
func decodeObject(s string) (map[string]any, error) {
	if s == "{}" { // most rows: skip the decoder
		return map[string]any{}, nil
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}
