package api

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// query reads a request's query string, collecting every problem so that one 400
// names all of them. Unknown parameters are refused: a misspelt filter would
// otherwise silently widen a list. So is a parameter given twice, unless it is a
// list (listParams): taking the first of two values would silently ignore the
// other.
type query struct {
	v    url.Values
	errs []model.FieldError
}

// listParams may be repeated (?tags=a&tags=b); every other parameter holds one value.
var listParams = []string{"tags", "role", "type"}

func parseQuery(r *http.Request, allowed ...string) *query {
	v, err := url.ParseQuery(r.URL.RawQuery)
	q := &query{v: v}
	if err != nil {
		q.fail("query", "is not valid URL encoding: "+err.Error())
	}
	for name, values := range q.v {
		switch {
		case !slices.Contains(allowed, name) && !(slices.Contains(allowed, "metadata.*") && isMetadataParam(name)):
			q.fail(name, "is not a known query parameter")
		case len(values) > 1 && !slices.Contains(listParams, name):
			q.fail(name, "is given "+strconv.Itoa(len(values))+" times; give it once")
		}
	}
	return q
}

// metadataKey reads a metadata filter's key from its parameter's name, in either
// form: metadata.KEY (everything after the first dot) or metadata[KEY] (OpenAPI's
// deepObject, which generated clients send).
func metadataKey(name string) (string, bool) {
	if key, ok := strings.CutPrefix(name, "metadata."); ok {
		return key, true
	}
	if rest, ok := strings.CutPrefix(name, "metadata["); ok && strings.HasSuffix(rest, "]") {
		return strings.TrimSuffix(rest, "]"), true
	}
	return "", false
}

func isMetadataParam(name string) bool {
	_, ok := metadataKey(name)
	return ok
}

func (q *query) fail(name, msg string) {
	q.errs = append(q.errs, model.FieldError{Field: name, Message: msg})
}

// err returns a 400 invalid_query naming every bad parameter, or nil.
func (q *query) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	slices.SortFunc(q.errs, func(a, b model.FieldError) int { return strings.Compare(a.Field, b.Field) })
	e := model.InvalidQuery(q.errs[0].Field, q.errs[0].Message)
	e.Fields = q.errs
	if len(q.errs) > 1 {
		e.Msg = "invalid query parameters"
	}
	return e
}

func (q *query) str(name string) string { return q.v.Get(name) }

// page reads limit (1–200, default 50) and cursor.
func (q *query) page() repo.PageRequest {
	p := repo.PageRequest{Limit: model.DefaultLimit, Cursor: q.v.Get("cursor")}
	if s := q.v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > model.MaxLimit {
			q.fail("limit", "must be an integer from 1 to 200")
		} else {
			p.Limit = n
		}
	}
	return p
}

// seq reads a non-negative integer; 0 when absent.
func (q *query) seq(name string) int64 {
	s := q.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		q.fail(name, "must be a non-negative integer")
		return 0
	}
	return n
}

func (q *query) time(name string) *model.Time {
	s := q.v.Get(name)
	if s == "" {
		return nil
	}
	t, err := model.ParseTime(s)
	if err != nil {
		q.fail(name, err.Error())
		return nil
	}
	return &t
}

// oneOf reads an enumerated value; "" when absent.
func (q *query) oneOf(name string, values ...string) string {
	s := q.v.Get(name)
	if s != "" && !slices.Contains(values, s) {
		q.fail(name, "must be one of: "+strings.Join(values, ", "))
		return ""
	}
	return s
}

// required reads a parameter that must be present and not empty.
func (q *query) required(name string) string {
	s := strings.TrimSpace(q.v.Get(name))
	if s == "" {
		q.fail(name, "is required")
	}
	return s
}

// list reads a parameter given as repeats (?tag=a&tag=b), commas (?tag=a,b) or both.
func (q *query) list(name string) []string {
	var out []string
	for _, v := range q.v[name] {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// flag reads a boolean, true or false; false when absent.
func (q *query) flag(name string) bool {
	switch q.v.Get(name) {
	case "", "false":
		return false
	case "true":
		return true
	}
	q.fail(name, "must be true or false")
	return false
}

// has reports whether the parameter was given (with any value).
func (q *query) has(name string) bool { return strings.TrimSpace(q.v.Get(name)) != "" }

// floats reads a list of numbers (a query embedding), at most 8,192.
func (q *query) floats(name string) []float32 {
	items := q.list(name)
	if len(items) > 8192 {
		q.fail(name, "must have at most 8192 numbers")
		return nil
	}
	var out []float32
	for _, v := range items {
		// Decimal numbers only, as JSON writes them: ParseFloat would also
		// take NaN, Inf, hex and underscores.
		if strings.Trim(v, "0123456789.eE+-") != "" {
			q.fail(name, "must be decimal numbers separated by commas")
			return nil
		}
		f, err := strconv.ParseFloat(v, 32)
		if err != nil {
			q.fail(name, "must be numbers separated by commas, each within the range of a 32-bit float")
			return nil
		}
		out = append(out, float32(f))
	}
	return out
}
