package api

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/logbook/logbook/internal/model"
)

// DefaultBodyMemoryBytes is what the server may hold of large request bodies
// at once, all tenants together, unless told otherwise. One tenant's half
// must hold the largest legal body of any route, or that body could never
// be admitted: a message route's, with a request's data: URLs at the default
// --max-file-bytes escaped six times over, is about 216 MiB (bodylimits.go).
// The data: URLs' decoded bytes are counted too, while they are held
// (api/inline.go).
const DefaultBodyMemoryBytes = 512 << 20

// bodyMemory counts what request bodies hold beyond --max-body-bytes (the
// first that many bytes of every body are free, as they always were): a
// route's limit admits the largest legal object escaped six times over, and
// without this, a tenant sending many such bodies at once, or sending them
// slowly, could make the server hold gigabytes. A tenant may hold half of
// the total, so that one tenant's flood leaves room for the others. What
// does not fit is refused (429 rate_limited, Retry-After), not queued: the
// client's retry comes back when bodies have been read and let go.
type bodyMemory struct {
	total, perTenant int64

	mu       sync.Mutex
	used     int64
	byTenant map[string]int64
}

func newBodyMemory(total int64) *bodyMemory {
	if total <= 0 {
		total = DefaultBodyMemoryBytes
	}
	return &bodyMemory{total: total, perTenant: total / 2, byTenant: map[string]int64{}}
}

func (m *bodyMemory) take(tenant string, n int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.byTenant[tenant]
	if m.used+n > m.total || t+n > m.perTenant {
		return false
	}
	m.used += n
	m.byTenant[tenant] = t + n
	return true
}

func (m *bodyMemory) give(tenant string, n int64) {
	if n == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= n
	if t := m.byTenant[tenant] - n; t > 0 {
		m.byTenant[tenant] = t
	} else {
		delete(m.byTenant, tenant)
	}
}

// inUse is what is held in all (tests).
func (m *bodyMemory) inUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// bodyHold is one body's share of the budget: the first free bytes cost
// nothing, and the rest is taken as the body's buffer grows.
type bodyHold struct {
	m      *bodyMemory
	tenant string
	free   int64
	held   int64
}

// grow makes room for a buffer of n bytes.
func (h *bodyHold) grow(n int64) error {
	need := n - h.free - h.held
	if need <= 0 {
		return nil
	}
	if !h.m.take(h.tenant, need) {
		return errBodyMemory(h.m)
	}
	h.held += need
	return nil
}

// release gives back what the body held; the body must not be used after.
func (h *bodyHold) release() {
	h.m.give(h.tenant, h.held)
	h.held = 0
}

func errBodyMemory(m *bodyMemory) *model.Error {
	return model.Errorf(model.KindRateLimited, "rate_limited",
		"this tenant's requests in flight already hold as much of their bodies as the server keeps for one tenant (%d bytes; --body-memory-bytes %d); retry after the Retry-After seconds",
		m.perTenant, m.total)
}

// readAllHeld reads src to its end into one buffer, taking its size from
// hold as it grows; sizeHint (Content-Length, or 0) sizes it at once. At most
// limit bytes are read: past them the error is an *http.MaxBytesError.
func readAllHeld(w http.ResponseWriter, r io.ReadCloser, hold *bodyHold, sizeHint, limit int64) ([]byte, error) {
	src := http.MaxBytesReader(w, r, limit)
	size := int64(512)
	if sizeHint > 0 {
		size = min(sizeHint, limit) + 1 // room for the read that finds the end
	}
	if err := hold.grow(size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			next := min(2*int64(cap(buf)), limit+1)
			if err := hold.grow(next); err != nil {
				return nil, err
			}
			nb := make([]byte, len(buf), next)
			copy(nb, buf)
			buf = nb
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// tooLarge is the 413 of a body past limit; announced says it was refused
// from its Content-Length, before any of it was read.
func tooLarge(limit, announced int64) *model.Error {
	if announced > 0 {
		return model.Errorf(model.KindTooLarge, "payload_too_large",
			"the request body (Content-Length %d) exceeds this route's limit of %d bytes", announced, limit)
	}
	return model.Errorf(model.KindTooLarge, "payload_too_large", "request body exceeds the limit of %d bytes", limit)
}

// asTooLarge turns a read past a MaxBytesReader into its 413.
func asTooLarge(err error) (*model.Error, bool) {
	var big *http.MaxBytesError
	if errors.As(err, &big) {
		return tooLarge(big.Limit, 0), true
	}
	return nil, false
}
