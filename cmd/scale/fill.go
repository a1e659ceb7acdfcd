package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The fill is conversations of a realistic shape, written through the public
// API's batch route: sessions of a few to a thousand messages (one of
// bigSession), user and assistant turns of 20–60 and 60–250 words from a
// Zipf-distributed vocabulary (~1 KB a message), session metadata with a
// customer, a channel and a tag that 1 session in 5,000 has, and a tenth of
// the sessions closed (what the purge erases). Words planted for the reads:
// rareWord in a few messages of one session, twoPctWord in 2% of all
// messages; the vocabulary's most frequent words make the common query.
const (
	rareWord   = "zyzzyva"
	twoPctWord = "quokka"
	// commonQuery are three of the vocabulary's most frequent words (not
	// English stop words, which PostgreSQL does not index).
	commonQuery = "please order help"
	tagValues   = 5000
	fillClients = 4
	batchMax    = 1000
)

// fillFacts is what the reads need to know of a fill.
type fillFacts struct {
	Messages      int64  `json:"messages"`
	Sessions      int64  `json:"sessions"`
	Closed        int64  `json:"closed_sessions"`
	BigSession    string `json:"big_session"`
	BigMessages   int    `json:"big_session_messages"`
	RareSession   string `json:"rare_session"`
	SmallSession  string `json:"small_session"`
	RareTag       string `json:"rare_tag"`
	FillSeconds   float64
	CreatedBefore time.Time `json:"-"` // sessions were created before this
}

// vocabulary is the fill's words, most frequent first.
var vocabulary = func() []string {
	words := []string{"please", "order", "help", "thanks", "account", "issue", "update", "check", "number", "today",
		"email", "payment", "delivery", "support", "refund", "password", "address", "invoice", "problem", "service"}
	syll := []string{"ka", "lo", "mi", "ren", "tas", "vo", "quil", "sen", "dar", "fen", "gor", "hal", "jin", "mor", "pel", "ru", "sto", "tev", "ul", "wex"}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for _, w := range words {
		seen[w] = true
	}
	for len(words) < 20000 {
		n := 2 + r.IntN(3)
		w := ""
		for range n {
			w += syll[r.IntN(len(syll))]
		}
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}()

// writer makes one fill client's messages.
type writer struct {
	r    *rand.Rand
	zipf *rand.Zipf
	buf  []byte
}

func newWriter(seed uint64) *writer {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	return &writer{r: r, zipf: rand.NewZipf(r, 1.07, 1, uint64(len(vocabulary)-1))}
}

// text appends n words, with rareWord when rare is set, and twoPctWord in 2%
// of messages.
func (w *writer) text(b []byte, n int, rare bool) []byte {
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, vocabulary[w.zipf.Uint64()]...)
	}
	if w.r.IntN(50) == 0 {
		b = append(b, " "+twoPctWord...)
	}
	if rare {
		b = append(b, " "+rareWord...)
	}
	return append(b, '.')
}

// batch is the body of one batch of n messages, turns alternating from a
// user's; rare plants rareWord in each.
func (w *writer) batch(n int, rare bool) []byte {
	b := append(w.buf[:0], `{"messages":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		role, words := "user", 20+w.r.IntN(40)
		if i%2 == 1 {
			role, words = "assistant", 60+w.r.IntN(190)
		}
		b = append(b, `{"role":"`+role+`","content":"`...)
		b = w.text(b, words, rare && i%5 == 0)
		b = append(b, `","tokens":`...)
		b = strconv.AppendInt(b, int64(words*4/3), 10)
		b = append(b, `,"cost":0.0001`...)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	w.buf = b
	return b
}

// sessionPlan is one session to write.
type sessionPlan struct {
	id       string
	messages int
	meta     map[string]string
	close    bool
	rare     bool
}

// plan lists the sessions of a fill of about n messages.
func plan(n int64) ([]sessionPlan, fillFacts) {
	r := rand.New(rand.NewPCG(3, 4))
	facts := fillFacts{BigMessages: int(min(100_000, n/10))}
	facts.BigSession, facts.RareSession, facts.SmallSession = "big", "rare-one", "small-one"
	out := []sessionPlan{
		{id: facts.BigSession, messages: facts.BigMessages},
		{id: facts.RareSession, messages: 100, rare: true},
		{id: facts.SmallSession, messages: 20},
	}
	left := n - int64(facts.BigMessages) - 120
	for i := 0; left > 0; i++ {
		var m int
		switch p := r.IntN(10); {
		case p < 6:
			m = 5 + r.IntN(36)
		case p < 9:
			m = 40 + r.IntN(161)
		default:
			m = 200 + r.IntN(801)
		}
		m = int(min(int64(m), left))
		left -= int64(m)
		out = append(out, sessionPlan{id: fmt.Sprintf("s%07d", i), messages: m, close: r.IntN(10) == 0})
	}
	channels := []string{"web", "email", "phone"}
	for i := range out {
		out[i].meta = map[string]string{"customer": fmt.Sprintf("c%d", r.IntN(max(1, len(out)/5))),
			"channel": channels[r.IntN(3)], "tag": fmt.Sprintf("t%d", i%tagValues)}
		facts.Messages += int64(out[i].messages)
		if out[i].close {
			facts.Closed++
		}
	}
	facts.Sessions = int64(len(out))
	facts.RareTag = fmt.Sprintf("t%d", 17) // 1 session in 5,000
	// The sessions are written by several clients at once; shuffle, so that
	// the big session is not written alone at the end.
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, facts
}

// fill writes the plan through the API, fillClients sessions at a time,
// printing its progress.
func fill(ctx context.Context, c *http.Client, s *server, sessions []sessionPlan, facts *fillFacts, log io.Writer) error {
	t0 := time.Now()
	var (
		next    atomic.Int64
		written atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		firstEr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-tick.C:
				n := written.Load()
				fmt.Fprintf(log, "  filled %d of %d messages (%.0f/s)\n", n, facts.Messages, float64(n)/time.Since(t0).Seconds())
			}
		}
	}()
	for k := range fillClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWriter(uint64(k) + 10)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(sessions) || ctx.Err() != nil {
					return
				}
				if err := writeSession(ctx, c, s, w, sessions[i], &written); err != nil {
					errOnce.Do(func() { firstEr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	facts.FillSeconds = time.Since(t0).Seconds()
	facts.CreatedBefore = time.Now()
	return firstEr
}

func writeSession(ctx context.Context, c *http.Client, s *server, w *writer, p sessionPlan, written *atomic.Int64) error {
	body, _ := json.Marshal(map[string]any{"id": p.id, "metadata": p.meta})
	if err := call(ctx, c, "POST", s.url("/v1/sessions"), body, http.StatusCreated, nil); err != nil {
		return err
	}
	for left := p.messages; left > 0; {
		n := min(left, batchMax)
		if err := call(ctx, c, "POST", s.url("/v1/sessions/"+p.id+"/messages/batch"), w.batch(n, p.rare), http.StatusCreated, nil); err != nil {
			return err
		}
		left -= n
		written.Add(int64(n))
	}
	if p.close {
		return call(ctx, c, "DELETE", s.url("/v1/sessions/"+p.id), nil, http.StatusOK, nil)
	}
	return nil
}

// call sends one request and checks its status; out, when not nil, gets the
// body decoded.
func call(ctx context.Context, c *http.Client, method, url string, body []byte, want int, out any, headers ...string) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s %s: status %d, want %d: %s", method, url, resp.StatusCode, want, b)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
