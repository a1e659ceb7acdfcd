package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// The live feed's log on SQLite is the gid space (migration 00025): a message
// is its own event at its gid, and every other event is a row of events at a
// gid of its own, from the same counter. The writer hands gids out in commit
// order, so what a reader has not seen yet can only come after what it has,
// and an append writes nothing for the feed.

// recordEvent adds an event to the log at the next gid, in the writer's
// transaction: it commits, or not, with the change it tells of.
func (s *Store) recordEvent(ctx context.Context, tx *sql.Tx, tenant, session string, typ model.EventType, data []byte) error {
	return s.recordEventAt(ctx, tx, s.nextGID(), tenant, session, typ, data)
}

// recordEventAt adds an event at a gid the caller took (a session's
// incarnation is its session.created event's gid).
func (s *Store) recordEventAt(ctx context.Context, tx *sql.Tx, gid int64, tenant, session string, typ model.EventType, data []byte) error {
	s.eventsWritten = true
	_, err := tx.StmtContext(ctx, s.st.insertEvent).ExecContext(ctx, gid, tenant, session, string(typ), string(data), int64(model.Now()))
	return err
}

// scanSpan bounds the gids one read of a tenant's (or the whole) log looks
// at: messages have no index by tenant and gid (it would cost every append),
// so a tenant's messages are found on messages_by_gid, whose entries hold the
// tenant, a stretch at a time. A reader far behind then reads in steps of
// bounded work, each returning how far it looked (EventBatch.Through).
const scanSpan = 16384

// ListEvents reads the tenant's events after q.After, in position order, in
// one read transaction: messages and event rows are merged from one
// snapshot, so nothing committed between two reads can fall in a gap.
func (s *Store) ListEvents(ctx context.Context, tenant string, q model.EventQuery) (model.EventBatch, error) {
	out := model.EventBatch{Through: q.After}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return out, mapErr(err)
	}
	defer tx.Rollback()
	head, err := eventHead(ctx, tx)
	if err != nil || head <= q.After {
		return out, mapErr(err)
	}
	upto := head
	var msgs *sql.Rows
	if wantsMessages(q.Types) {
		if tenant != "" && q.SessionID != "" {
			msgs, err = s.sessionMessageEvents(ctx, tx, tenant, q.SessionID, q.After)
		} else {
			upto = min(head, q.After+scanSpan)
			msgs, err = gidMessageEvents(ctx, tx, tenant, q.SessionID, q.After, upto)
		}
		if err != nil {
			return out, mapErr(err)
		}
		if msgs != nil {
			defer msgs.Close()
		}
	}
	var rows *sql.Rows
	if wantsRows(q.Types) {
		if rows, err = eventRows(ctx, tx, tenant, q, upto); err != nil {
			return out, mapErr(err)
		}
		defer rows.Close()
	}
	m, r := newEventCursor(msgs, true), newEventCursor(rows, false)
	size := 0
	for !q.Full(len(out.Events), size) {
		if err := m.peek(); err != nil {
			return out, mapErr(err)
		}
		if err := r.peek(); err != nil {
			return out, mapErr(err)
		}
		var next *eventCursor
		switch {
		case m.ok && (!r.ok || m.e.Pos < r.e.Pos):
			next = m
		case r.ok:
			next = r
		default:
			out.Through, out.More = upto, upto < head
			return out, nil
		}
		e := next.take()
		out.Events = append(out.Events, e)
		out.Through = e.Pos
		size += len(e.Data)
	}
	out.More = out.Through < head
	return out, nil
}

func wantsMessages(types []model.EventType) bool {
	return len(types) == 0 || slices.Contains(types, model.EventMessageAppended)
}

func wantsRows(types []model.EventType) bool {
	return len(types) == 0 || slices.ContainsFunc(types, func(t model.EventType) bool { return t != model.EventMessageAppended })
}

// sessionMessageEvents reads the session's message events after gid after,
// in seq order, which is their gid order. It finds where they start without
// reading the session: in_feed rows are past a prefix of the seqs, and their
// gids grow with their seqs (migration 00025), so "an in_feed row with gid >
// after" is false, then true, along the seqs, and a binary search of point
// reads of the primary key finds the first seq where it holds. Nil: none.
func (s *Store) sessionMessageEvents(ctx context.Context, tx *sql.Tx, tenant, session string, after int64) (*sql.Rows, error) {
	var last sql.NullInt64
	if err := tx.StmtContext(ctx, s.rst.feedLastSeq).QueryRowContext(ctx, tenant, session).Scan(&last); err != nil {
		return nil, err
	}
	probe := tx.StmtContext(ctx, s.rst.feedProbe)
	past := func(seq int64) (bool, error) {
		var gid, inFeed int64
		err := probe.QueryRowContext(ctx, tenant, session, seq).Scan(&gid, &inFeed)
		switch {
		case err == sql.ErrNoRows: // a fork's inherited seq: its parent's row
			return false, nil
		case err != nil:
			return false, err
		}
		return inFeed == 1 && gid > after, nil
	}
	lo, hi := int64(1), last.Int64+1 // the first seq past, in [lo, hi]; hi: none
	for lo < hi {
		mid := lo + (hi-lo)/2
		ok, err := past(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo > last.Int64 {
		return nil, nil
	}
	return tx.StmtContext(ctx, s.rst.feedSessionMessages).QueryContext(ctx, tenant, session, lo)
}

// gidMessageEvents reads the message events with gid in (after, upto] of a
// tenant (or every tenant), optionally of one session, in gid order.
func gidMessageEvents(ctx context.Context, tx *sql.Tx, tenant, session string, after, upto int64) (*sql.Rows, error) {
	where, args := []string{"gid > ?", "gid <= ?"}, []any{after, upto}
	if tenant != "" {
		where, args = append(where, "tenant_id = ?"), append(args, tenant)
	}
	if session != "" {
		where, args = append(where, "session_id = ?"), append(args, session)
	}
	return tx.QueryContext(ctx, `SELECT `+messageColumns+`, gid, tenant_id FROM messages INDEXED BY messages_by_gid
		WHERE `+strings.Join(where, " AND ")+` AND in_feed = 1 ORDER BY gid`, args...)
}

// eventRows reads the event rows q selects with pos in (q.After, upto].
func eventRows(ctx context.Context, tx *sql.Tx, tenant string, q model.EventQuery, upto int64) (*sql.Rows, error) {
	var (
		where = []string{"pos > ?", "pos <= ?"}
		args  = []any{q.After, upto}
	)
	if tenant != "" {
		where, args = append(where, "tenant_id = ?"), append(args, tenant)
	}
	if q.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, q.SessionID)
	}
	if len(q.Types) > 0 {
		marks := make([]string, 0, len(q.Types))
		for _, t := range q.Types {
			if t != model.EventMessageAppended {
				marks, args = append(marks, "?"), append(args, string(t))
			}
		}
		where = append(where, "type IN ("+strings.Join(marks, ", ")+")")
	}
	return tx.QueryContext(ctx, `SELECT pos, type, tenant_id, session_id, data FROM events
		WHERE `+strings.Join(where, " AND ")+` ORDER BY pos`, args...)
}

// eventCursor is one side of ListEvents' merge: message rows or event rows,
// read one ahead.
type eventCursor struct {
	rows     *sql.Rows
	messages bool
	mr       *messageRow
	gid      int64
	rowTen   string
	e        model.Event
	ok, done bool
}

func newEventCursor(rows *sql.Rows, messages bool) *eventCursor {
	c := &eventCursor{rows: rows, messages: messages, done: rows == nil}
	if messages {
		c.mr = newMessageRow(&c.gid, &c.rowTen)
	}
	return c
}

// peek reads the cursor's next event, unless it holds one.
func (c *eventCursor) peek() error {
	if c.ok || c.done {
		return nil
	}
	if !c.rows.Next() {
		c.done = true
		return c.rows.Err()
	}
	if c.messages {
		m, err := c.mr.scan(c.rows)
		if err != nil {
			return err
		}
		c.e = model.Event{Pos: c.gid, Tenant: c.rowTen, Type: model.EventMessageAppended, SessionID: m.SessionID,
			Seq: m.Seq, Data: repo.MessageEventData(&m)}
	} else {
		var typ string
		var data sql.NullString
		c.e = model.Event{}
		if err := c.rows.Scan(&c.e.Pos, &typ, &c.e.Tenant, &c.e.SessionID, &data); err != nil {
			return err
		}
		c.e.Type, c.e.Data = model.EventType(typ), []byte(data.String)
	}
	c.ok = true
	return nil
}

func (c *eventCursor) take() model.Event {
	c.ok = false
	return c.e
}

// EventPosOfSeq returns the gid of the session's message seq when the session
// appended it, else (and for seq 0) the gid just before the session's
// creation: its incarnation is its session.created event's gid (repo.Events).
func (s *Store) EventPosOfSeq(ctx context.Context, tenant, sessionID string, seq int64) (int64, error) {
	var incarnation int64
	err := s.rdb.QueryRowContext(ctx, `SELECT incarnation FROM sessions WHERE tenant_id = ? AND id = ?`, tenant, sessionID).Scan(&incarnation)
	if err == sql.ErrNoRows {
		return 0, model.NotFound("session", sessionID)
	}
	if err != nil {
		return 0, mapErr(err)
	}
	if seq <= 0 {
		return max(incarnation-1, 0), nil // a session from before 00025 has 0
	}
	var gid, inFeed int64
	err = s.rdb.QueryRowContext(ctx, `SELECT gid, in_feed FROM messages WHERE tenant_id = ? AND session_id = ? AND seq = ?`,
		tenant, sessionID, seq).Scan(&gid, &inFeed)
	switch {
	case err == nil && inFeed == 1:
		return gid, nil
	case err == nil || err == sql.ErrNoRows:
		return max(incarnation-1, 0), nil
	}
	return 0, mapErr(err)
}

// EventHead returns the highest gid handed out and committed.
func (s *Store) EventHead(ctx context.Context) (int64, error) {
	head, err := eventHead(ctx, s.rdb)
	return head, mapErr(err)
}

// eventHead is the highest gid a commit has used, or kept as the high-water
// mark after its rows were deleted (noteDeletedMessages): the writer hands
// out only gids above it.
func eventHead(ctx context.Context, q querier) (int64, error) {
	var head int64
	err := q.QueryRowContext(ctx, maxGIDSQL).Scan(&head)
	return head, err
}

// maxGIDSQL reads the highest gid ever handed out: the newest messages and
// events may have been purged, the high-water mark remembers them. The usage
// folder's mark counts too: a message below it would never be folded.
const maxGIDSQL = `SELECT MAX(COALESCE((SELECT MAX(gid) FROM messages), 0),
	COALESCE((SELECT MAX(pos) FROM events), 0),
	COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'gid_high_water'), 0),
	COALESCE((SELECT folded FROM usage_state WHERE one = 1), 0))`

// EventsChanged is closed after the writer's next commit of events.
func (s *Store) EventsChanged() <-chan struct{} { return s.events.Changed() }

// FeedSecret is the database's feed secret, read (or drawn) at Open.
func (s *Store) FeedSecret() []byte { return s.feedSecret }

// loadFeedSecret reads the database's feed secret, drawing and storing one
// the first time.
func loadFeedSecret(ctx context.Context, db *sql.DB) ([]byte, error) {
	fresh, err := repo.NewFeedSecret()
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO feed_secret (one, secret) VALUES (1, ?)`, fresh); err != nil {
		return nil, err
	}
	var secret []byte
	err = db.QueryRowContext(ctx, `SELECT secret FROM feed_secret WHERE one = 1`).Scan(&secret)
	return secret, err
}
