package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// clientIDInLineagePG finds a client id ($3) in a session's history ($1
// tenant, $2 session): its own rows and every inherited segment, one probe of
// messages_by_client_id per segment.
const clientIDInLineagePG = lineageSegmentsPG + `
	SELECT m.* FROM segments g CROSS JOIN LATERAL (
		SELECT ` + messageColumnsPG + ` FROM messages
		WHERE tenant_id = $1 AND session_id = g.owner AND client_id = $3 AND seq > g.lo AND seq <= g.hi LIMIT 1) m
	LIMIT 1`

// messageByClientIDPG reads the message of the session's history with client id cid.
func messageByClientIDPG(ctx context.Context, q pgx.Tx, tenant, session, cid string) (model.Message, bool, error) {
	m, err := newMsgScanRowPG().scan(q.QueryRow(ctx, clientIDInLineagePG, tenant, session, cid))
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	return m, err == nil, err
}

// GetMessageByClientID returns the message of a session's history (a fork's
// inherited ones included) with that client id. Errors: KindNotFound.
func (s *Store) GetMessageByClientID(ctx context.Context, tenant, sessionID, clientID string) (model.Message, error) {
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return model.Message{}, err
	}
	// The lineage also says whether the session is there, and not expired.
	if _, err := readLineagePG(ctx, s.pool, tenant, sessionID); err != nil {
		return model.Message{}, mapErr(err)
	}
	m, err := newMsgScanRowPG().scan(s.pool.QueryRow(ctx, clientIDInLineagePG, tenant, sessionID, clientID))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return m, model.NotFound("message", clientID)
	case err != nil:
		return m, mapErr(err)
	}
	m.SessionID = sessionID
	return m, nil
}

// appendQueueClientIDsPG reads, in the append's lookup batch, which of the
// group's client ids the session's history holds, and at which seq. Only a
// group that carries client ids queues it.
func appendQueueClientIDsPG(b *pgx.Batch, tenant, session string, ids []string, v *appendViewPG) {
	b.Queue(lineageSegmentsPG+`
		SELECT k.cid, m.seq FROM unnest($3::text[]) AS k(cid) CROSS JOIN LATERAL (
			SELECT m.seq FROM segments g CROSS JOIN LATERAL (
				SELECT seq FROM messages
				WHERE tenant_id = $1 AND session_id = g.owner AND client_id = k.cid AND seq > g.lo AND seq <= g.hi LIMIT 1) m
			LIMIT 1) m`, tenant, session, ids).Query(func(rows pgx.Rows) error {
		var (
			cid string
			seq int64
		)
		for rows.Next() {
			if err := rows.Scan(&cid, &seq); err != nil {
				return err
			}
			v.clientIDs[cid] = seq
		}
		return rows.Err()
	})
}

// appendCheckClientIDsPG refuses fresh rows whose client id the history holds
// (client_id_taken), as SQLite's checkClientIDs does.
func appendCheckClientIDsPG(a *appendOpPG, v *appendViewPG, fresh []int) error {
	for _, i := range fresh {
		cid := a.rows[i].msg.ClientID
		if cid == nil {
			continue
		}
		if seq, ok := v.clientIDs[*cid]; ok {
			field := "client_id"
			if a.req.Batch {
				field = fmt.Sprintf("messages[%d].client_id", i)
			}
			return model.ClientIDTaken(field, *cid, seq)
		}
	}
	return nil
}

// rewindTargetPG is the seq a rewind keeps: to_seq, or the seq of the message
// named by to_client_id (kept) or from_client_id (removed too).
func rewindTargetPG(ctx context.Context, tx pgx.Tx, tenant, id string, in model.Rewind) (int64, error) {
	field, cid := "to_client_id", in.ToClientID
	if in.FromClientID != nil {
		field, cid = "from_client_id", in.FromClientID
	}
	if cid == nil {
		return *in.ToSeq, nil
	}
	m, ok, err := messageByClientIDPG(ctx, tx, tenant, id, *cid)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, model.ClientIDNotFound(field, *cid)
	case in.FromClientID != nil:
		return m.Seq - 1, nil
	}
	return m.Seq, nil
}
