package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// openLoop has one client per URL send body to it at random intervals of
// gapMin to gapMax until d has passed, each send when it is due whether or not
// the client's previous request has answered. Agents append on their own
// schedule: a closed loop would send less while the server is slow, and so
// under-sample the very stalls it is there to see. A latency counts from the
// moment its send was due.
func openLoop(ctx context.Context, c *http.Client, urls []string, key string, body []byte, gapMin, gapMax, d time.Duration) *timings {
	var (
		t  timings
		wg sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	for _, url := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			due := time.Now()
			for {
				due = due.Add(gapMin + rand.N(gapMax-gapMin+1))
				if due.After(deadline) {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(due)):
				}
				wg.Add(1) // while this goroutine's own count holds wg above zero
				go func(due time.Time) {
					defer wg.Done()
					err := postAs(ctx, c, url, key, body, http.StatusCreated)
					if ctx.Err() == nil {
						t.add(due, err)
					}
				}(due)
			}
		}()
	}
	wg.Wait()
	return &t
}

// burst is a closed loop of big appends: burstLen messages back to back, then
// pause, until d has passed or maxBursts (if not 0) are done.
type burst struct {
	url, key  string
	burstLen  int
	pause     time.Duration
	maxBursts int
	texts     []string // contents, used in turn
}

// bursts is what a burst loop did.
type bursts struct {
	timings *timings
	bytes   int64  // content appended
	marker  string // a word only the last appended message holds
}

func (b burst) run(ctx context.Context, c *http.Client, d time.Duration) bursts {
	out := bursts{timings: &timings{}}
	deadline := time.Now().Add(d)
	n := 0
	for i := 0; b.maxBursts == 0 || i < b.maxBursts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return out
			case <-time.After(b.pause):
			}
		}
		for range b.burstLen {
			if ctx.Err() != nil || time.Now().After(deadline) {
				return out
			}
			text := b.texts[n%len(b.texts)]
			n++
			// At the end, so that finding it in a search shows that the last part
			// of the message was indexed.
			marker := "bigmsg" + strconv.Itoa(n)
			t0 := time.Now()
			err := postAs(ctx, c, b.url, b.key, bigMessage(text, marker), http.StatusCreated)
			if ctx.Err() != nil {
				return out
			}
			out.timings.add(t0, err)
			if err == nil {
				out.bytes += int64(len(text))
				out.marker = marker
			}
		}
	}
	return out
}

// bigMessage is a message of text and then marker, put together by hand rather
// than by encoding/json: wordsText and the markers hold nothing JSON escapes,
// and at a few ms per MB encoding would take the CPU that B's clients share.
func bigMessage(text, marker string) []byte {
	b := make([]byte, 0, len(text)+len(marker)+64)
	b = append(b, `{"role":"user","content":"`...)
	b = append(b, text...)
	b = append(b, ' ')
	b = append(b, marker...)
	b = append(b, `","tokens":`...)
	b = strconv.AppendInt(b, int64(len(text)/4), 10)
	return append(b, '}')
}

// wordsTexts makes n texts of about size bytes each of random words like "w12345", so
// that full-text indexing has a realistic number of distinct tokens to do.
// The seed is fixed: every run indexes the same text.
func wordsTexts(n, size int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, n)
	for i := range texts {
		buf := make([]byte, 0, size+8)
		for len(buf) < size {
			if len(buf) > 0 {
				buf = append(buf, ' ')
			}
			buf = append(buf, 'w')
			buf = strconv.AppendInt(buf, int64(rng.IntN(100000)), 10)
		}
		texts[i] = string(buf)
	}
	return texts
}
