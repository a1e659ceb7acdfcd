package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// figure is one measured read or operation: milliseconds at the 50th and
// 99th percentiles of its repetitions (one repetition for an operation), and
// for an operation the appends' p99 before and during it.
type figure struct {
	Name        string  `json:"name"`
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	Reps        int     `json:"reps"`
	AppendsBase float64 `json:"appends_p99_before_ms,omitempty"`
	AppendsDur  float64 `json:"appends_p99_during_ms,omitempty"`
	Note        string  `json:"note,omitempty"`
}

// timeRead runs read reps times (stopping early past budget) and returns its
// percentiles. The first run is a warm-up and is not counted.
func timeRead(ctx context.Context, name string, reps int, budget time.Duration, read func(context.Context) error) (figure, error) {
	if err := read(ctx); err != nil {
		return figure{}, fmt.Errorf("%s: %w", name, err)
	}
	var ms []float64
	t0 := time.Now()
	for range reps {
		start := time.Now()
		if err := read(ctx); err != nil {
			return figure{}, fmt.Errorf("%s: %w", name, err)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		if time.Since(t0) > budget && len(ms) >= 5 {
			break
		}
	}
	return figure{Name: name, P50: percentile(ms, 50), P99: percentile(ms, 99), Reps: len(ms)}, nil
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// searchResult is what the reads look at in a search's answer.
type searchResult struct {
	Data []struct {
		SessionID string `json:"session_id"`
	} `json:"data"`
	IndexLag int64 `json:"index_lag"`
	Partial  bool  `json:"partial"`
}

// reads measures every read of the table, in its order.
func reads(ctx context.Context, c *http.Client, s *server, facts fillFacts, log func(figure)) ([]figure, error) {
	var out []figure
	get := func(path string, check func(*searchResult) error) func(context.Context) error {
		return func(ctx context.Context) error {
			if check == nil {
				return call(ctx, c, "GET", s.url(path), nil, http.StatusOK, nil)
			}
			var res searchResult
			if err := call(ctx, c, "GET", s.url(path), nil, http.StatusOK, &res); err != nil {
				return err
			}
			return check(&res)
		}
	}
	found := func(want string) func(*searchResult) error {
		return func(r *searchResult) error {
			if len(r.Data) == 0 {
				return fmt.Errorf("no hit (index_lag %d)", r.IndexLag)
			}
			if want != "" && r.Data[0].SessionID != want {
				return fmt.Errorf("first hit in %s, want %s", r.Data[0].SessionID, want)
			}
			return nil
		}
	}
	year := time.Now().AddDate(-1, 0, 0).UTC().Format("2006-01-02")
	deep, err := deepSessionsCursor(ctx, c, s, facts)
	if err != nil {
		return nil, err
	}
	createdRange := "created_after=" + url.QueryEscape(time.Unix(0, 0).UTC().Format(time.RFC3339)) +
		"&created_before=" + url.QueryEscape(facts.CreatedBefore.UTC().Format(time.RFC3339Nano))
	half := facts.BigMessages / 2
	for _, r := range []struct {
		name  string
		reps  int
		read  func(context.Context) error
		check string
	}{
		{"search across the tenant: a word in one session", 100, get("/v1/messages/search?q="+rareWord, found(facts.RareSession)), ""},
		{"search across the tenant: a word in 2% of messages", 100, get("/v1/messages/search?q="+twoPctWord, found("")), ""},
		{"search across the tenant: common words", 50, get("/v1/messages/search?q="+url.QueryEscape(commonQuery), found("")), ""},
		{"search within one small session (a common word)", 100, get("/v1/messages/search?q=please&session_id="+facts.SmallSession, found(facts.SmallSession)), ""},
		{"sessions by a rare metadata value (1 in 5,000)", 100, get("/v1/sessions?limit=20&metadata.tag="+facts.RareTag, nil), ""},
		{"sessions: a deep page of a created range", 100, get("/v1/sessions?limit=100&"+createdRange+"&cursor="+deep, nil), ""},
		{"messages: first page of the big session", 100, get("/v1/sessions/"+facts.BigSession+"/messages?limit=100", nil), ""},
		{"messages: deep page of the big session", 100, get(fmt.Sprintf("/v1/sessions/%s/messages?limit=100&after_seq=%d", facts.BigSession, half), nil), ""},
		{"messages: newest page of the big session", 100, get("/v1/sessions/"+facts.BigSession+"/messages?limit=100&order=desc", nil), ""},
		{"usage by session over a year", 50, get("/v1/usage?group_by=session&from="+year, nil), ""},
	} {
		f, err := timeRead(ctx, r.name, r.reps, 20*time.Second, r.read)
		if err != nil {
			return out, err
		}
		log(f)
		out = append(out, f)
	}
	return out, nil
}

// deepSessionsCursor pages through the created range a hundred sessions at a
// time to about the middle of the tenant's sessions, and returns the cursor
// there.
func deepSessionsCursor(ctx context.Context, c *http.Client, s *server, facts fillFacts) (string, error) {
	createdRange := "created_after=" + url.QueryEscape(time.Unix(0, 0).UTC().Format(time.RFC3339)) +
		"&created_before=" + url.QueryEscape(facts.CreatedBefore.UTC().Format(time.RFC3339Nano))
	cursor := ""
	for seen := int64(0); seen < facts.Sessions/2; seen += 100 {
		var page struct {
			NextCursor *string `json:"next_cursor"`
		}
		path := "/v1/sessions?limit=100&" + createdRange
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if err := call(ctx, c, "GET", s.url(path), nil, http.StatusOK, &page); err != nil {
			return "", err
		}
		if page.NextCursor == nil {
			break
		}
		cursor = url.QueryEscape(*page.NextCursor)
	}
	return cursor, nil
}
