package sqlite

import (
	"fmt"
	"math"
	"strconv"

	"github.com/logbook/logbook/internal/model"
)

// Token and cost values are bounded when they are written (model.MaxMessageTokens
// and friends, and the running totals in the writer), but a row written by an
// older build, by hand or by a damaged file may hold anything SQLite can store:
// an integer that overflowed into a REAL, or an infinite cost. Reading such a row
// must not fail every list that contains it, nor produce JSON that cannot be
// encoded; these scanners clamp instead, and the integrity check reports the row.

// counterInt scans an integer counter, clamping a REAL to the int64 range.
type counterInt struct{ p *int64 }

func (c counterInt) Scan(v any) error {
	switch x := v.(type) {
	case int64:
		*c.p = x
	case float64:
		*c.p = clampInt(x)
	case nil:
		*c.p = 0
	case string:
		return c.Scan([]byte(x))
	case []byte:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return fmt.Errorf("counter %q is not a number", x)
		}
		*c.p = clampInt(f)
	default:
		return fmt.Errorf("counter of type %T", v)
	}
	return nil
}

// counterFloat scans a cost, turning ±Inf into the largest finite float and NaN
// into 0, since JSON has no way to write either.
type counterFloat struct{ p *float64 }

func (c counterFloat) Scan(v any) error {
	switch x := v.(type) {
	case float64:
		*c.p = finite(x)
	case int64:
		*c.p = float64(x)
	case nil:
		*c.p = 0
	case string:
		return c.Scan([]byte(x))
	case []byte:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return fmt.Errorf("cost %q is not a number", x)
		}
		*c.p = finite(f)
	default:
		return fmt.Errorf("cost of type %T", v)
	}
	return nil
}

func clampInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func finite(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case math.IsInf(f, 1):
		return math.MaxFloat64
	case math.IsInf(f, -1):
		return -math.MaxFloat64
	}
	return f
}

// checkTotals refuses a write that would take a session's running totals past
// their bounds; prefix names the message that carried the last straw
// ("messages[3]." in a batch, "" for one message).
func checkTotals(tokens int64, cost float64, prefix string) error {
	if tokens > model.MaxTotalTokens || tokens < 0 {
		return model.LimitExceeded(prefix+"tokens", fmt.Sprintf(
			"would take the session's total_tokens to %d, past the limit of %d", tokens, int64(model.MaxTotalTokens)))
	}
	if cost > model.MaxTotalCost || math.IsNaN(cost) || math.IsInf(cost, 0) {
		return model.LimitExceeded(prefix+"cost", fmt.Sprintf(
			"would take the session's total_cost to %g, past the limit of %g", cost, float64(model.MaxTotalCost)))
	}
	return nil
}
