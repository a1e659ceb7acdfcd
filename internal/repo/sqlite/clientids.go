package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// messageByClientID finds the message of a history (segs, as lineage gives
// it) whose client id is cid: the session's own rows first, then each
// inherited segment, one probe of messages_by_client_id each.
func messageByClientID(ctx context.Context, q querier, tenant string, segs []segment, cid string) (model.Message, bool, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		g := segs[i]
		m, err := scanMessage(q.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages INDEXED BY messages_by_client_id
			WHERE tenant_id = ? AND session_id = ? AND client_id = ? AND seq > ? AND seq <= ?`, tenant, g.owner, cid, g.lo, g.hi))
		switch {
		case err == sql.ErrNoRows:
			continue
		case err != nil:
			return m, false, err
		}
		return m, true, nil
	}
	return model.Message{}, false, nil
}

// GetMessageByClientID returns the message of a session's history (a fork's
// inherited ones included) with that client id. Errors: KindNotFound.
func (s *Store) GetMessageByClientID(ctx context.Context, tenant, sessionID, clientID string) (model.Message, error) {
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return model.Message{}, err
	}
	segs, err := s.readLineage(ctx, tenant, sessionID)
	if err != nil {
		return model.Message{}, mapErr(err)
	}
	m, ok, err := messageByClientID(ctx, s.rdb, tenant, segs, clientID)
	switch {
	case err != nil:
		return m, mapErr(err)
	case !ok:
		return m, model.NotFound("message", clientID)
	}
	m.SessionID = sessionID
	return m, nil
}

// checkClientIDs refuses fresh rows whose client id the session's history
// holds, stored or staged in this group (client_id_taken). Only an append
// that carries client ids reads anything: its lineage, and one probe per id
// and segment.
func (s *Store) checkClientIDs(ctx context.Context, tx *sql.Tx, g *group, a *appendOp, fresh []int) error {
	var segs []segment
	for _, i := range fresh {
		cid := a.rows[i].msg.ClientID
		if cid == nil {
			continue
		}
		field := "client_id"
		if a.req.Batch {
			field = fmt.Sprintf("messages[%d].client_id", i)
		}
		if seq, ok := g.clientIDs[keyRef{a.tenant, a.session, *cid}]; ok {
			return model.ClientIDTaken(field, *cid, seq)
		}
		if segs == nil {
			var err error
			if segs, err = lineage(ctx, tx, a.tenant, a.session); err != nil {
				return err
			}
		}
		m, ok, err := messageByClientID(ctx, tx, a.tenant, segs, *cid)
		if err != nil {
			return err
		}
		if ok {
			return model.ClientIDTaken(field, *cid, m.Seq)
		}
	}
	return nil
}

// noteClientID records a staged row's client id for the appends after it in
// the group.
func (g *group) noteClientID(tenant, session string, m *model.Message) {
	if m.ClientID == nil {
		return
	}
	if g.clientIDs == nil {
		g.clientIDs = map[keyRef]int64{}
	}
	g.clientIDs[keyRef{tenant, session, *m.ClientID}] = m.Seq
}
