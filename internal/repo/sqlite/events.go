package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// recordEvent adds an event to the live feed's log, in the writer's
// transaction: it commits, or not, with the change it tells of. A message's
// event names the message (msgID, seq); any other carries its data.
func (s *Store) recordEvent(ctx context.Context, tx *sql.Tx, tenant, session string, typ model.EventType,
	msgID string, seq int64, data []byte) error {
	var id, text any
	var seqArg any
	if msgID != "" {
		id, seqArg = msgID, seq
	}
	if data != nil {
		text = string(data)
	}
	s.eventsWritten = true
	_, err := tx.StmtContext(ctx, s.st.insertEvent).ExecContext(ctx, tenant, session, string(typ), id, seqArg, text, int64(model.Now()))
	return err
}

// ListEvents returns the tenant's events after q.After, in order (repo.Events).
// The writer gives out pos in commit order, so what a reader has not seen
// yet can only come after what it has.
func (s *Store) ListEvents(ctx context.Context, tenant string, q model.EventQuery) ([]model.Event, error) {
	var (
		where []string
		args  []any
	)
	if tenant != "" {
		where, args = append(where, "e.tenant_id = ?"), append(args, tenant)
	}
	if q.SessionID != "" {
		where, args = append(where, "e.session_id = ?"), append(args, q.SessionID)
	}
	if len(q.Types) > 0 {
		marks := make([]string, len(q.Types))
		for i, t := range q.Types {
			marks[i], args = "?", append(args, string(t))
		}
		where = append(where, "e.type IN ("+strings.Join(marks, ", ")+")")
	}
	where, args = append(where, "e.pos > ?"), append(args, q.After)
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.rdb.QueryContext(ctx, `SELECT e.pos, e.type, e.tenant_id, e.session_id, e.message_id, e.seq, e.data
		FROM events e WHERE `+strings.Join(where, " AND ")+` ORDER BY e.pos LIMIT ?`, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var (
		out   []model.Event
		wants []eventMessage
	)
	for rows.Next() {
		var (
			e      model.Event
			typ    string
			tenant string
			msgID  sql.NullString
			seq    sql.NullInt64
			data   sql.NullString
		)
		if err := rows.Scan(&e.Pos, &typ, &tenant, &e.SessionID, &msgID, &seq, &data); err != nil {
			return nil, mapErr(err)
		}
		e.Type, e.Tenant, e.Data = model.EventType(typ), tenant, []byte(data.String)
		if msgID.Valid {
			e.MessageID, e.Seq = msgID.String, seq.Int64
			wants = append(wants, eventMessage{i: len(out), tenant: tenant, id: msgID.String, seq: seq.Int64})
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	rows.Close()
	return out, s.fillEventMessages(ctx, out, wants)
}

// eventMessage is a message.appended event waiting for its message.
type eventMessage struct {
	i          int
	tenant, id string
	seq        int64
}

// fillEventMessages reads the messages the events name, in chunks of one
// query each, and makes each event's data.
func (s *Store) fillEventMessages(ctx context.Context, out []model.Event, wants []eventMessage) error {
	const chunk = 200
	for len(wants) > 0 {
		n := min(chunk, len(wants))
		part := wants[:n]
		wants = wants[n:]
		marks := make([]string, n)
		args := make([]any, 0, 2*n)
		for i, w := range part {
			marks[i] = "(?, ?)"
			args = append(args, w.tenant, w.id)
		}
		rows, err := s.rdb.QueryContext(ctx, `SELECT `+messageColumns+`, tenant_id FROM messages
			WHERE (tenant_id, id) IN (VALUES `+strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return mapErr(err)
		}
		found := map[[2]string]model.Message{}
		var tenant string
		mr := newMessageRow(&tenant)
		for rows.Next() {
			m, err := mr.scan(rows)
			if err != nil {
				rows.Close()
				return mapErr(err)
			}
			found[[2]string{tenant, m.ID}] = m
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		for _, w := range part {
			e := &out[w.i]
			if m, ok := found[[2]string{w.tenant, w.id}]; ok {
				e.Data = repo.MessageEventData(&m, "", "", 0)
			} else {
				e.Data = repo.MessageEventData(nil, w.id, e.SessionID, w.seq)
			}
		}
	}
	return nil
}

// EventPosOfSeq returns where the session's message seq was appended, as the
// session stands now: a rewind may have numbered another message seq since.
func (s *Store) EventPosOfSeq(ctx context.Context, tenant, sessionID string, seq int64) (int64, error) {
	var pos int64
	err := s.rdb.QueryRowContext(ctx, `SELECT pos FROM events WHERE tenant_id = ? AND session_id = ? AND seq = ?
		ORDER BY pos DESC LIMIT 1`, tenant, sessionID, seq).Scan(&pos)
	if err == sql.ErrNoRows {
		return 0, model.NotFound("event of message seq", itoa(seq))
	}
	return pos, mapErr(err)
}

// EventHead returns the latest event's position.
func (s *Store) EventHead(ctx context.Context) (int64, error) {
	var pos int64
	err := s.rdb.QueryRowContext(ctx, `SELECT COALESCE(MAX(pos), 0) FROM events`).Scan(&pos)
	return pos, mapErr(err)
}

// EventsChanged is closed after the writer's next commit of events.
func (s *Store) EventsChanged() <-chan struct{} { return s.events.Changed() }
