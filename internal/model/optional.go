package model

import (
	"bytes"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
)

// Optional tells apart a JSON field that was absent, explicitly null, or set, which
// PATCH semantics need ("title": null clears the title; no "title" keeps it).
type Optional[T any] struct {
	Set   bool // the field was present in the input
	Null  bool // it was present and null
	Value T
}

func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	if err := jsonv2.Unmarshal(b, &o.Value, strict); err != nil {
		return jsonError(err) // fields relative to this value; the caller prefixes its name
	}
	return nil
}

func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Set || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// Ptr returns the value as a pointer: nil when absent or null.
func (o Optional[T]) Ptr() *T {
	if !o.Set || o.Null {
		return nil
	}
	v := o.Value
	return &v
}
