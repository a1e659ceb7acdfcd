package api

import (
	"strconv"
	"sync"

	"github.com/logbook/logbook/internal/model"
)

// defaultEventsMaxStreams bounds the live feeds one principal (a tenant, or
// one end user of it for a key bound to a user) holds open at once. A feed
// holds a connection, a goroutine and at most one batch of events
// (EventsBatchBytes, or one event larger than it) for as long as its client
// keeps it open, so without a bound one client could open feeds until the
// server's memory or file descriptors ran out; per principal, so that one
// end user cannot take another's share. 256 leaves room for a backend that
// watches each of its users' sessions under one key.
const defaultEventsMaxStreams = 256

// feedSlots counts the open feeds of each principal.
type feedSlots struct {
	mu   sync.Mutex
	max  int
	open map[feedOwner]int
}

type feedOwner struct{ tenant, user string }

// take counts one more feed of p's, or refuses it (rate_limited, 429) when p
// holds max already. The caller gives the slot back with release.
func (f *feedSlots) take(p model.Principal) error {
	k := feedOwner{p.Tenant, p.UserID}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[k] >= f.max {
		return &model.Error{Kind: model.KindRateLimited, Code: "rate_limited",
			Msg: "this key's tenant (or user) has " + strconv.Itoa(f.max) +
				" live feeds open already (--events-max-streams): close one, or retry after the Retry-After seconds"}
	}
	if f.open == nil {
		f.open = map[feedOwner]int{}
	}
	f.open[k]++
	return nil
}

func (f *feedSlots) release(p model.Principal) {
	k := feedOwner{p.Tenant, p.UserID}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[k]--; f.open[k] <= 0 {
		delete(f.open, k)
	}
}
