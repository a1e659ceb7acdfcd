package feed

// Stats is what the hub is doing, for monitoring.
type Stats struct {
	Readers   int   // readers subscribed now: live feed streams open
	Buffered  int   // events held in memory now
	Read      int64 // events the hub has read from the store's log, ever
	Delivered int64 // events handed to readers, ever (one event read by two readers counts twice)
	Following bool  // the hub follows the log now: what commits from here on reaches its memory
	Head      int64 // the log's position the hub has read up to
}

// Stats reports the hub's figures; it takes the hub's lock for a moment.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Readers: h.readers, Buffered: len(h.ring), Read: h.read, Delivered: h.delivered.Load(), Following: h.tailing, Head: h.head}
}
