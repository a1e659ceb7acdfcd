package model

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Operators of an item search's filter, LangGraph's: a field given a plain
// value is $eq.
const (
	OpEq  = "$eq"
	OpNe  = "$ne"
	OpGt  = "$gt"
	OpGte = "$gte"
	OpLt  = "$lt"
	OpLte = "$lte"
	OpIn  = "$in"
	OpNin = "$nin"
)

// Kinds of the JSON scalars a filter compares with.
const (
	ScalarString  = "string"
	ScalarNumber  = "number"
	ScalarBoolean = "boolean"
	ScalarNull    = "null"
)

// FilterValue is one JSON scalar of a filter.
type FilterValue struct {
	Kind string
	Str  string
	Num  float64
	Bool bool
}

// ItemCondition is one condition of a filter on a top-level field of the
// items' values. Both backends read it the same way:
//
//   - $eq: the field holds a scalar of the value's kind that equals it
//     (numbers by value: 1 equals 1.0);
//   - $ne: not $eq, so an item without the field matches;
//   - $gt $gte $lt $lte: a number compares with fields holding numbers, a
//     string with fields holding strings (bytewise); other fields do not
//     match;
//   - $in: $eq one of the list; $nin: none of it.
type ItemCondition struct {
	Field  string
	Op     string
	Values []FilterValue // one; the list for $in and $nin
}

// maxFilterList bounds an $in or $nin list.
const maxFilterList = 100

// ParseItemFilter reads a search's filter, an object of field: value or
// field: {operator: value, …}, into conditions in a fixed order (field, then
// operator), so that the same filter always makes the same search (and
// cursor). field names the filter in errors.
func ParseItemFilter(field string, f Object) ([]ItemCondition, error) {
	if len(f) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f, &m); err != nil {
		return nil, Invalid(FieldError{Field: field, Message: "must be an object"})
	}
	var out []ItemCondition
	fail := func(name, msg string) error {
		return Invalid(FieldError{Field: field + "." + name, Message: msg})
	}
	for name, raw := range m {
		if name == "" || utf8.RuneCountInString(name) > MaxItemPathChars {
			return nil, fail(name, "a field name must be 1 to "+strconv.Itoa(MaxItemPathChars)+" characters long")
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '{' {
			var ops map[string]json.RawMessage
			if err := json.Unmarshal(raw, &ops); err != nil || len(ops) == 0 {
				return nil, fail(name, "must be a string, number, boolean, null or an object of operators ($eq $ne $gt $gte $lt $lte $in $nin)")
			}
			for op, v := range ops {
				c, err := condition(name, op, v)
				if err != nil {
					return nil, fail(name+"."+op, err.Error())
				}
				out = append(out, c)
			}
			continue
		}
		v, ok := scalar(raw)
		if !ok {
			return nil, fail(name, "must be a string, number, boolean, null or an object of operators ($eq $ne $gt $gte $lt $lte $in $nin)")
		}
		out = append(out, ItemCondition{Field: name, Op: OpEq, Values: []FilterValue{v}})
	}
	if len(out) > MaxItemFilters {
		return nil, Invalid(FieldError{Field: field, Message: "must have at most " + strconv.Itoa(MaxItemFilters) + " conditions"})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Field != out[j].Field {
			return out[i].Field < out[j].Field
		}
		return out[i].Op < out[j].Op
	})
	return out, nil
}

type filterError string

func (e filterError) Error() string { return string(e) }

func condition(name, op string, raw json.RawMessage) (ItemCondition, error) {
	c := ItemCondition{Field: name, Op: op}
	switch op {
	case OpEq, OpNe:
		v, ok := scalar(raw)
		if !ok {
			return c, filterError("must be a string, number, boolean or null")
		}
		c.Values = []FilterValue{v}
	case OpGt, OpGte, OpLt, OpLte:
		v, ok := scalar(raw)
		if !ok || (v.Kind != ScalarNumber && v.Kind != ScalarString) {
			return c, filterError("must be a number or a string")
		}
		c.Values = []FilterValue{v}
	case OpIn, OpNin:
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 || len(list) > maxFilterList {
			return c, filterError("must be a list of 1 to " + strconv.Itoa(maxFilterList) + " strings, numbers, booleans or nulls")
		}
		for _, item := range list {
			v, ok := scalar(item)
			if !ok {
				return c, filterError("must be a list of strings, numbers, booleans or nulls")
			}
			c.Values = append(c.Values, v)
		}
	default:
		return c, filterError("is not an operator: use $eq $ne $gt $gte $lt $lte $in $nin")
	}
	return c, nil
}

// scalar reads a JSON scalar; ok is false for an object or array.
func scalar(raw json.RawMessage) (FilterValue, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return FilterValue{}, false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return FilterValue{}, false
		}
		return FilterValue{Kind: ScalarString, Str: s}, true
	case 't', 'f':
		return FilterValue{Kind: ScalarBoolean, Bool: raw[0] == 't'}, true
	case 'n':
		return FilterValue{Kind: ScalarNull}, true
	case '{', '[':
		return FilterValue{}, false
	}
	n, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(n, 0) {
		return FilterValue{}, false
	}
	return FilterValue{Kind: ScalarNumber, Num: n}, true
}
