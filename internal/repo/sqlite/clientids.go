package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
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
// that carries client ids reads anything: its lineage, and one look-up per
// segment for all its ids together.
func (s *Store) checkClientIDs(ctx context.Context, tx *sql.Tx, g *group, a *appendOp, fresh []int) error {
	var ids []string
	at := map[string]int{} // id → its row
	for _, i := range fresh {
		cid := a.rows[i].msg.ClientID
		if cid == nil {
			continue
		}
		if seq, ok := g.clientIDs[keyRef{a.tenant, a.session, *cid}]; ok {
			return model.ClientIDTaken(clientIDField(a, i), *cid, seq)
		}
		ids = append(ids, *cid)
		at[*cid] = i
	}
	if len(ids) == 0 {
		return nil
	}
	segs, err := lineage(ctx, tx, a.tenant, a.session)
	if err != nil {
		return err
	}
	list, _ := json.Marshal(ids)
	for _, sg := range segs {
		var (
			cid string
			seq int64
		)
		err := tx.QueryRowContext(ctx, `SELECT client_id, seq FROM messages INDEXED BY messages_by_client_id
			WHERE tenant_id = ? AND session_id = ? AND client_id IN (SELECT value FROM json_each(?)) AND seq > ? AND seq <= ?
			LIMIT 1`, a.tenant, sg.owner, string(list), sg.lo, sg.hi).Scan(&cid, &seq)
		switch {
		case err == sql.ErrNoRows:
			continue
		case err != nil:
			return err
		}
		return model.ClientIDTaken(clientIDField(a, at[cid]), cid, seq)
	}
	return nil
}

func clientIDField(a *appendOp, i int) string {
	if a.req.Batch {
		return fmt.Sprintf("messages[%d].client_id", i)
	}
	return "client_id"
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
