package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/logbook/logbook/client/api"
)

// Problem is every non-2xx answer: the server's problem+json (RFC 9457) with
// its stable Code, the bad fields in Errors (e.g. "messages[1].tool_call_id"),
// and the problem's own members (LatestIteration for stale_iteration, LastSeq
// for stale_seq, …), plus what the answer's headers said. Branch on Code:
//
//	var p *client.Problem
//	if errors.As(err, &p) && p.Code == api.ErrorCodeStaleIteration { … }
//
// An answer that is not a problem (a proxy's 502 page) is a Problem too, with
// its status, an empty Code and the start of its body as Detail.
type Problem struct {
	api.Problem

	// RequestID is the answer's X-Request-Id: quote it when reporting a 5xx.
	RequestID string
	// RetryAfter is the answer's Retry-After (429 and 503), 0 when absent.
	RetryAfter time.Duration
}

func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "logbook: %d", p.Status)
	if p.Code != "" {
		b.WriteString(" " + string(p.Code))
	}
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	} else if p.Title != "" {
		b.WriteString(": " + p.Title)
	}
	if p.RequestID != "" {
		b.WriteString(" (request " + p.RequestID + ")")
	}
	return b.String()
}

// Code is err's problem code, or "" when err is not a *Problem.
func Code(err error) api.ErrorCode {
	var p *Problem
	if errors.As(err, &p) {
		return p.Code
	}
	return ""
}

// Field is the message of the problem's error about field (a JSON path such
// as "messages[0].role", or a query parameter), and whether there is one.
func (p *Problem) Field(field string) (string, bool) {
	for _, e := range p.Errors {
		if e.Field == field {
			return e.Message, true
		}
	}
	return "", false
}

func problemFrom(resp *http.Response, body []byte) *Problem {
	p := &Problem{RequestID: resp.Header.Get("X-Request-Id"), RetryAfter: retryAfter(resp.Header)}
	if err := json.Unmarshal(body, &p.Problem); err != nil || p.Problem.Status == 0 {
		detail := strings.TrimSpace(string(body))
		if len(detail) > 200 {
			detail = detail[:200] + "…"
		}
		p.Problem = api.Problem{Title: http.StatusText(resp.StatusCode), Detail: detail}
	}
	p.Status = resp.StatusCode // the status line wins over a body that says otherwise
	return p
}

// retryAfter reads Retry-After as seconds or as an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
