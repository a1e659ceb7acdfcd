package sqlite

import (
	"context"
	"sync"
)

// lagBook counts, per tenant, the messages the indexer has not reached, so that
// a search answers index_lag from memory. Counting them per search walked the
// whole backlog each time (0.3–0.5 s per search at a backlog of 7M messages).
//
// It learns of new messages by reading the gid index forward from where it
// last stopped (observe), so each message is counted once however many
// searches ask; the indexer takes messages off as it indexes them (indexed).
// Counts are kept per block of lagBlock gids: a message deleted before the
// indexer reached it is never indexed, and stays counted only until the
// indexer passes the end of its block, when what is left of the block goes,
// or until the indexer catches up, when the book counts again what is left
// (resync; little, by then).
type lagBook struct {
	mu     sync.Mutex
	seen   int64                      // every gid up to seen is counted or indexed
	next   int64                      // the indexer's progress: gids below it are indexed
	total  map[string]int64           // tenant → messages waiting
	blocks map[int64]map[string]int64 // gid/lagBlock → tenant → messages waiting in it
}

// lagBlock is the width, in gids, of a block of counts.
const lagBlock = 1 << 12

func newLagBook(next int64) *lagBook {
	return &lagBook{seen: next - 1, next: next, total: map[string]int64{}, blocks: map[int64]map[string]int64{}}
}

// lagScanRows bounds one read of the gid index, so that a large backlog (after
// a restart, or a rebuilt index) is counted in pieces of a fraction of a
// second each, between which the indexer may record its progress.
const lagScanRows = 1 << 18

// observe counts the messages written since its last call. The lock is held
// across each read so that the indexer's progress cannot move under it: a
// message is either counted here and taken off by indexed, or never counted.
func (b *lagBook) observe(ctx context.Context, q querier) error {
	for {
		n, err := b.observeOnce(ctx, q)
		if err != nil || n < lagScanRows {
			return err
		}
	}
}

func (b *lagBook) observeOnce(ctx context.Context, q querier) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// One statement is one snapshot, and the single writer commits gids in
	// order: every gid up to the largest this read returns is in it.
	rows, err := q.QueryContext(ctx, `SELECT gid / ?1, tenant_id, COUNT(*), MAX(gid) FROM
		(SELECT gid, tenant_id FROM messages INDEXED BY messages_by_gid WHERE gid > ?2 ORDER BY gid LIMIT ?3)
		GROUP BY 1, 2`, lagBlock, max(b.seen, b.next-1), lagScanRows)
	if err != nil {
		return 0, err
	}
	var n int64
	for rows.Next() {
		var (
			block, count, top int64
			tenant            string
		)
		if err := rows.Scan(&block, &tenant, &count, &top); err != nil {
			rows.Close()
			return 0, err
		}
		blk := b.blocks[block]
		if blk == nil {
			blk = map[string]int64{}
			b.blocks[block] = blk
		}
		blk[tenant] += count
		b.total[tenant] += count
		b.seen, n = max(b.seen, top), n+count
	}
	rows.Close()
	return n, rows.Err()
}

// indexed takes the messages the indexer finished off the counts, and drops
// the blocks it has passed (next is its new progress).
func (b *lagBook) indexed(done []pendingMessage, next int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range done {
		if m.gid > b.seen {
			continue // indexed before it was counted: it never will be
		}
		if blk := b.blocks[m.gid/lagBlock]; blk != nil && blk[m.tenant] > 0 {
			blk[m.tenant]--
			b.take(m.tenant, 1)
		}
	}
	for k := b.next / lagBlock; (k+1)*lagBlock <= next; k++ {
		for tenant, n := range b.blocks[k] {
			b.take(tenant, n)
		}
		delete(b.blocks, k)
	}
	b.next = max(b.next, next)
	b.seen = max(b.seen, next-1)
}

func (b *lagBook) take(tenant string, n int64) {
	if b.total[tenant] -= n; b.total[tenant] <= 0 {
		delete(b.total, tenant)
	}
}

// resync counts the backlog afresh from next, the indexer's progress: called
// when the indexer has caught up, so the backlog is small, and what deleted
// messages it still counted goes.
func (b *lagBook) resync(ctx context.Context, q querier, next int64) error {
	b.mu.Lock()
	b.seen, b.next = next-1, next
	clear(b.total)
	clear(b.blocks)
	b.mu.Unlock()
	return b.observe(ctx, q)
}

// lag is how many of tenant's messages wait for the indexer, counting those
// written up to now.
func (b *lagBook) lag(ctx context.Context, q querier, tenant string) (int64, error) {
	if err := b.observe(ctx, q); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total[tenant], nil
}

// all is how many messages of every tenant wait for the indexer.
func (b *lagBook) all(ctx context.Context, q querier) (int64, error) {
	if err := b.observe(ctx, q); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, v := range b.total {
		n += v
	}
	return n, nil
}
