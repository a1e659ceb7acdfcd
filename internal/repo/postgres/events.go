package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// The channels the feed's notifications go on: a transaction that records
// events says so at its commit, and the sequencer, after it numbered some.
const (
	eventsRecordedChannel  = "logbook_events"
	eventsSequencedChannel = "logbook_events_sequenced"
)

// recordEventPG adds an event to the log in tx and, at its commit, tells
// every process's listener (NOTIFY is delivered only if tx commits).
func recordEventPG(ctx context.Context, tx pgx.Tx, tenant, session string, typ model.EventType, data []byte) error {
	_, err := tx.Exec(ctx, `WITH e AS (INSERT INTO events (tenant_id, session_id, type, data, created_at)
			VALUES ($1, $2, $3, $4, $5))
		SELECT pg_notify('`+eventsRecordedChannel+`', '')`,
		tenant, session, string(typ), string(data), int64(model.Now()))
	return err
}

// batchSender is what both the pool and the listener's own connection offer.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sequenceEventsPG numbers, in id order, the events of every transaction
// committed so far, and says so when it numbered any. Any process may run it:
// the sequencer row's lock makes the rounds one at a time, and the numbering
// statement, run after the lock is taken, sees every commit before it. One
// round trip: BEGIN, the lock, the numbering and COMMIT go as one batch.
func sequenceEventsPG(ctx context.Context, q batchSender) error {
	for {
		var n int64
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		b.Queue(`SELECT 1 FROM event_sequencer WHERE one FOR UPDATE`)
		b.Queue(`WITH last AS (SELECT last_pos FROM event_sequencer WHERE one),
				todo AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM events WHERE pos IS NULL ORDER BY id LIMIT 5000),
				numbered AS (UPDATE events e SET pos = last.last_pos + todo.n FROM todo, last WHERE e.id = todo.id RETURNING e.pos),
				bump AS (UPDATE event_sequencer SET last_pos = m.top FROM (SELECT max(pos) AS top FROM numbered) m
					WHERE one AND m.top IS NOT NULL RETURNING last_pos)
			SELECT (SELECT count(*) FROM numbered), (SELECT count(pg_notify('` + eventsSequencedChannel + `', '')) FROM bump)`).QueryRow(
			func(row pgx.Row) error {
				var told int64
				return row.Scan(&n, &told)
			})
		b.Queue(`COMMIT`)
		if err := q.SendBatch(ctx, b).Close(); err != nil {
			return mapErr(err)
		}
		if n < 5000 {
			return nil
		}
	}
}

// ListEvents returns the tenant's numbered events after q.After, in order,
// within q's bounds (repo.Events); tenant "" reads every tenant's. A
// message's event whose message is gone (a rewind took it since) is left out,
// as SQLite, whose message events are the messages, leaves it out.
func (s *Store) ListEvents(ctx context.Context, tenant string, q model.EventQuery) (model.EventBatch, error) {
	out := model.EventBatch{Through: q.After}
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if tenant != "" {
		where = append(where, "tenant_id = "+arg(tenant))
	}
	if q.SessionID != "" {
		where = append(where, "session_id = "+arg(q.SessionID))
	}
	if len(q.Types) > 0 {
		types := make([]string, len(q.Types))
		for i, t := range q.Types {
			types[i] = string(t)
		}
		where = append(where, "type = ANY("+arg(types)+")")
	}
	where = append(where, "pos > "+arg(q.After))
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	// The rows are small (a message's names the message); the messages are
	// read after, a few at a time, until the batch's bytes pass q.MaxBytes.
	rows, err := s.pool.Query(ctx, `SELECT pos, type, tenant_id, session_id, message_id, data FROM events
		WHERE `+strings.Join(where, " AND ")+` ORDER BY pos LIMIT `+arg(limit), args...)
	if err != nil {
		return out, mapErr(err)
	}
	var (
		evs   []model.Event
		msgID []string
	)
	for rows.Next() {
		var (
			e    model.Event
			typ  string
			id   *string
			data *string
		)
		if err := rows.Scan(&e.Pos, &typ, &e.Tenant, &e.SessionID, &id, &data); err != nil {
			rows.Close()
			return out, mapErr(err)
		}
		e.Type = model.EventType(typ)
		if data != nil {
			e.Data = []byte(*data)
		}
		evs = append(evs, e)
		msgID = append(msgID, deref(id))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, mapErr(err)
	}
	more := len(evs) == limit
	size, msgBytes, msgs := 0, 0, 0
	for i := 0; i < len(evs); {
		// The messages of the next events, in one probe each by their whole
		// key (messages_by_id), as the append's lookups do; as many as the
		// bytes left hold at the size of those read so far (one to start
		// with), so that a batch of large messages reads no more of them
		// than it returns.
		want := 1
		if msgs > 0 && q.MaxBytes > 0 {
			want = (q.MaxBytes - size) / max(msgBytes/msgs, 1)
		} else if msgs > 0 {
			want = maxEventMessages
		}
		want = min(max(want, 1), maxEventMessages)
		j, n := i, 0
		for ; j < len(evs) && n < want; j++ {
			if msgID[j] != "" {
				n++
			}
		}
		found, err := s.eventMessages(ctx, evs[i:j], msgID[i:j])
		if err != nil {
			return out, err
		}
		for ; i < j; i++ {
			e := evs[i]
			if msgID[i] != "" {
				m, ok := found[[2]string{e.Tenant, msgID[i]}]
				if !ok {
					out.Through = e.Pos // gone: the feed shows what is stored
					continue
				}
				e.Seq, e.Data = m.Seq, repo.MessageEventData(&m)
				msgBytes, msgs = msgBytes+len(e.Data), msgs+1
			}
			out.Events = append(out.Events, e)
			out.Through = e.Pos
			size += len(e.Data)
			if q.Full(len(out.Events), size) {
				out.More = i+1 < len(evs) || more
				return out, nil
			}
		}
	}
	out.More = more
	return out, nil
}

// maxEventMessages bounds the messages ListEvents reads in one query.
const maxEventMessages = 256

// eventMessages reads the messages evs name (ids[i] for evs[i]; "" for an
// event of no message), by tenant and id.
func (s *Store) eventMessages(ctx context.Context, evs []model.Event, ids []string) (map[[2]string]model.Message, error) {
	var tenants, wanted []string
	for i, id := range ids {
		if id != "" {
			tenants, wanted = append(tenants, evs[i].Tenant), append(wanted, id)
		}
	}
	found := map[[2]string]model.Message{}
	if len(wanted) == 0 {
		return found, nil
	}
	mrows, err := s.pool.Query(ctx, `SELECT m.* FROM unnest($1::text[], $2::text[]) AS k(tenant_id, id)
		CROSS JOIN LATERAL (SELECT `+messageColumnsPG+`, tenant_id FROM messages
			WHERE tenant_id = k.tenant_id AND id = k.id LIMIT 1) m`, tenants, wanted)
	if err != nil {
		return nil, mapErr(err)
	}
	defer mrows.Close()
	var mt string
	sc := newMsgScanRowPG(&mt)
	for mrows.Next() {
		m, err := sc.scan(mrows)
		if err != nil {
			return nil, mapErr(err)
		}
		found[[2]string{mt, m.ID}] = m
	}
	return found, mapErr(mrows.Err())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// EventPosOfSeq returns where the session's message seq was appended, as the
// session stands now, or, for seq 0 and a message the session did not append
// (a fork's inherited prefix, an import), just before its first event, its
// session.created (repo.Events).
func (s *Store) EventPosOfSeq(ctx context.Context, tenant, sessionID string, seq int64) (int64, error) {
	if err := sequenceEventsPG(ctx, s.pool); err != nil {
		return 0, err
	}
	// The session's first event is its session.created: a purge took the
	// events of any earlier session of this id along.
	var pos *int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(
			(SELECT pos FROM events WHERE tenant_id = $1 AND session_id = $2 AND seq = $3 AND $3 > 0 AND pos IS NOT NULL
				ORDER BY pos DESC LIMIT 1),
			(SELECT pos - 1 FROM events WHERE tenant_id = $1 AND session_id = $2 AND pos IS NOT NULL ORDER BY pos LIMIT 1))
		FROM sessions WHERE tenant_id = $1 AND id = $2`, tenant, sessionID, seq).Scan(&pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, model.NotFound("session", sessionID)
	}
	if err != nil {
		return 0, mapErr(err)
	}
	if pos == nil {
		return 0, nil
	}
	return *pos, nil
}

// EventHead numbers what has committed, then returns the last position: a
// feed that starts "now" starts after every write acknowledged before it.
func (s *Store) EventHead(ctx context.Context) (int64, error) {
	if err := sequenceEventsPG(ctx, s.pool); err != nil {
		return 0, err
	}
	var pos int64
	err := s.pool.QueryRow(ctx, `SELECT last_pos FROM event_sequencer WHERE one`).Scan(&pos)
	return pos, mapErr(err)
}

// FeedSecret is the database's feed secret, read (or drawn) at Open.
func (s *Store) FeedSecret() []byte { return s.feedSecret }

// loadFeedSecretPG reads the database's feed secret, drawing and storing one
// the first time; of two processes opening at once, one's is kept, and both
// read it (the read is a statement of its own, which sees the other's commit).
func loadFeedSecretPG(ctx context.Context, pool *pgxpool.Pool) ([]byte, error) {
	fresh, err := repo.NewFeedSecret()
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO feed_secret (one, secret) VALUES (true, $1) ON CONFLICT (one) DO NOTHING`, fresh); err != nil {
		return nil, err
	}
	var secret []byte
	err = pool.QueryRow(ctx, `SELECT secret FROM feed_secret WHERE one`).Scan(&secret)
	return secret, err
}

// EventsChanged is closed once the sequencer (of any process) numbered more
// events. The first call starts this process's listener.
func (s *Store) EventsChanged() <-chan struct{} {
	s.listenOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopListen, s.listenDone = cancel, make(chan struct{})
		go s.listenEvents(ctx)
	})
	return s.events.Changed()
}

// listenEvents follows the feed's notifications on a connection of its own:
// recorded events are numbered at once (by whichever process gets there
// first), numbered ones wake this process's readers. A tick covers what a
// lost connection missed.
func (s *Store) listenEvents(ctx context.Context) {
	defer close(s.listenDone)
	for ctx.Err() == nil {
		// A lost connection (the database restarting) is tried again; the
		// readers' own polls cover the gap.
		_ = s.listenConn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// drainNotifications takes the notifications that have already arrived on
// conn, without waiting for more.
func drainNotifications(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return nil
		default:
			return err
		}
	}
}

// listenConn is one connection's life of listenEvents.
func (s *Store) listenConn(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, ch := range []string{eventsRecordedChannel, eventsSequencedChannel} {
		if _, err := conn.Exec(ctx, `LISTEN `+ch); err != nil {
			return err
		}
	}
	// What committed before LISTEN took effect is numbered now. The listener
	// numbers on its own connection: the pool may be busy with the very
	// appends whose events wait.
	if err := sequenceEventsPG(ctx, conn); err != nil {
		return err
	}
	s.events.Signal()
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		tick := errors.Is(err, context.DeadlineExceeded)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !tick:
			return err
		case tick || n.Channel == eventsRecordedChannel:
			// A busy database records faster than one round numbers: what is
			// already waiting takes the same round.
			if err := drainNotifications(ctx, conn); err != nil {
				return err
			}
			if err := sequenceEventsPG(ctx, conn); err != nil {
				return err
			}
			s.events.Signal() // ours or another process's numbering: readers look
		default:
			s.events.Signal()
		}
	}
}
