package model

// UsageGroupBy says what usage is summed by.
type UsageGroupBy string

// The ways GET /v1/usage groups: by UTC day, by agent (the message's, else its
// session's), by model, by session.
const (
	UsageByDay     UsageGroupBy = "day"
	UsageByAgent   UsageGroupBy = "agent"
	UsageByModel   UsageGroupBy = "model"
	UsageBySession UsageGroupBy = "session"
)

// UsageQuery selects the stored messages of the UTC days FromDay..ToDay
// (days since 1970-01-01, both included).
type UsageQuery struct {
	GroupBy        UsageGroupBy
	FromDay, ToDay int64
	AgentID        string // "" for every agent
	Limit          int    // rows at most (groups other than day)
}

// UsageRow is one group's sums. Key is the day (YYYY-MM-DD), the agent, the
// model or the session; nil for messages with no agent or no model.
type UsageRow struct {
	Key      *string `json:"key"`
	Messages int64   `json:"messages"`
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost"`
}

// UsageTotals are the sums over every group of a usage answer.
type UsageTotals struct {
	Messages int64   `json:"messages"`
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost"`
}

// Usage is GET /v1/usage's answer.
type Usage struct {
	GroupBy UsageGroupBy `json:"group_by"`
	From    string       `json:"from"` // the first day, YYYY-MM-DD
	To      string       `json:"to"`   // the last day, included
	Data    []UsageRow   `json:"data"`
	Total   UsageTotals  `json:"total"`
}

// DayOf is the UTC day of t, in days since 1970-01-01.
func DayOf(t Time) int64 {
	ms := int64(t)
	d := ms / 86_400_000
	if ms < 0 && ms%86_400_000 != 0 {
		d--
	}
	return d
}
