package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxObjectBytes bounds a metadata object, as sent and after any number of merge
// patches: without it, repeated PATCHes could grow one row without limit.
const MaxObjectBytes = 64 << 10

// Object is a JSON object (metadata) kept as its compact text, so that it reaches
// the database and comes back digit for digit (a large integer stays exact) with
// no decoding in between. The zero value is the empty object.
type Object []byte

// ObjectOf encodes m; tests and merge patches build objects this way.
func ObjectOf(m map[string]any) (Object, error) {
	if len(m) == 0 {
		return Object("{}"), nil
	}
	b, err := json.Marshal(m) // keys sorted
	if err != nil {
		return nil, err
	}
	return Object(b), nil
}

// UnmarshalJSON takes an object (null counts as none) no deeper than
// MaxJSONDepth and no larger than MaxObjectBytes once compacted.
func (o *Object) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = nil
		return nil
	}
	v, err := checkValue(b, MaxObjectBytes)
	if err != nil {
		return err
	}
	if v[0] != '{' {
		return valueError("must be an object")
	}
	*o = Object(v)
	return nil
}

// MarshalJSON writes the stored text; nil is {}.
func (o Object) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("{}"), nil
	}
	return o, nil
}

// String is the text to store.
func (o Object) String() string {
	if len(o) == 0 {
		return "{}"
	}
	return string(o)
}

// Map decodes the object, numbers as json.Number so that they stay exact.
func (o Object) Map() (map[string]any, error) {
	m := map[string]any{}
	if len(o) == 0 {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(o))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// Merge applies an RFC 7396 merge patch and checks that the result still fits
// MaxObjectBytes; field names the input in the error.
func (o Object) Merge(patch Object, field string) (Object, error) {
	target, err := o.Map()
	if err != nil {
		return nil, Internal(err)
	}
	p, err := patch.Map()
	if err != nil {
		return nil, Internal(err)
	}
	merged, _ := MergePatch(target, p).(map[string]any)
	out, err := ObjectOf(merged)
	if err != nil {
		return nil, Internal(err)
	}
	if n := jsonSize(out); n > MaxObjectBytes {
		return nil, Invalid(FieldError{Field: field, Message: fmt.Sprintf(
			"would grow to %d bytes once merged, over the limit of %d", n, MaxObjectBytes)})
	}
	return out, nil
}

// JSON is any JSON value kept as its text: a checkpoint's state, a tool's input.
// It is checked for depth when decoded, like every free-form value.
type JSON []byte

func (j *JSON) UnmarshalJSON(b []byte) error {
	v, err := checkValue(b, 0)
	if err != nil {
		return err
	}
	*j = JSON(v)
	return nil
}

// MarshalJSON writes the stored text; nil is null.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// checkValue copies a decoded value compactly after checking its depth and, when
// maxBytes > 0, its size.
func checkValue(b []byte, maxBytes int) ([]byte, error) {
	if jsonDepth(b, MaxJSONDepth) > MaxJSONDepth {
		return nil, valueError(fmt.Sprintf("nests more than %d levels deep", MaxJSONDepth))
	}
	v := jsontext.Value(bytes.Clone(b))
	if err := v.Compact(); err != nil {
		return nil, valueError("is not valid JSON")
	}
	if n := jsonSize(v); maxBytes > 0 && n > maxBytes {
		return nil, valueError(fmt.Sprintf("must be at most %d bytes of JSON, not %d", maxBytes, n))
	}
	return v, nil
}

// jsonSize is a compact value's length with the escapes that HTML-safe JSON
// writers add (\u003c \u003e \u0026 for < > &, \u2028 \u2029) counted as the
// characters they stand for. Logbook writes values back that way, so an export
// may hold a value six times longer than it came: measured like this, the value
// an import reads back is the size it was when it was accepted.
func jsonSize(v []byte) int {
	n := len(v)
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 >= len(v) {
			continue
		}
		if v[i+1] != 'u' || i+5 >= len(v) {
			i++ // a two-byte escape: \" \\ \n …
			continue
		}
		switch strings.ToLower(string(v[i+2 : i+6])) {
		case "003c", "003e", "0026":
			n -= 5
		case "2028", "2029":
			n -= 3
		}
		i += 5
	}
	return n
}

// valueError is a problem with a value whose field the decoder names.
func valueError(msg string) *Error {
	return Invalid(FieldError{Message: msg})
}
