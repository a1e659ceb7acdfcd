package repo

import (
	"context"

	"github.com/logbook/logbook/internal/model"
)

// Usage answers GET /v1/usage from rollups each backend keeps in the
// transactions that store or remove messages.
type Usage interface {
	// Usage sums the tenant's stored messages of q's days by q.GroupBy.
	Usage(ctx context.Context, tenant string, q model.UsageQuery) (model.Usage, error)
}

// UsageDate is a day number as the API writes it.
func UsageDate(day int64) string {
	return model.Time(day * 86_400_000).Std().Format("2006-01-02")
}

// UsageFinish fills what both backends compute the same way: the days as
// dates, the totals, and an empty list rather than null.
func UsageFinish(q model.UsageQuery, rows []model.UsageRow) model.Usage {
	u := model.Usage{GroupBy: q.GroupBy, From: UsageDate(q.FromDay), To: UsageDate(q.ToDay), Data: rows}
	if u.Data == nil {
		u.Data = []model.UsageRow{}
	}
	for _, r := range u.Data {
		u.Total.Messages += r.Messages
		u.Total.Tokens += r.Tokens
		u.Total.Cost += r.Cost
	}
	return u
}
