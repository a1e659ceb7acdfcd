package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// forkCopyChunkPG bounds the messages one statement copies when a fork takes
// its prefix over, as SQLite's copyChunk does: a long prefix is never one
// statement's worth of ids held at once.
const forkCopyChunkPG = 500

// forkTotalsPG are a session's counters at one seq, as its row there stores
// them (SQLite's runningTotals).
type forkTotalsPG struct {
	tokens, turns int64
	cost          float64
}

// ForkSession makes a new session whose history is the parent's first AtSeq
// messages (default: all of them), shared rather than copied, with the
// parent's counters at AtSeq. Errors as on SQLite: KindNotFound,
// validation_failed (at_seq beyond the parent), conflict (id taken: the fork
// takes in.ID as repo.PlaceSession says, for the parent's user).
//
// The parent's row is share-locked: a rewind or purge of it (which locks it
// for update) either commits first, and the fork sees its outcome, or waits
// for the fork to commit and then finds it among the forks to detach.
func (s *Store) ForkSession(ctx context.Context, tenant, parentID string, in model.ForkSession) (model.Session, error) {
	var fork model.Session
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		parent, err := getSessionTx(ctx, tx, tenant, parentID, " FOR SHARE")
		if err != nil {
			return err
		}
		at := parent.LastSeq
		if in.AtSeq != nil {
			at = *in.AtSeq
		}
		var from *model.Checkpoint
		if in.AtCheckpoint != nil {
			cp, err := ckstore.ForkPoint(ctx, ckRowsPG{tx, tenant, parentID}, *in.AtCheckpoint)
			if err != nil {
				return err
			}
			from, at = &cp, cp.LastSeq
		}
		if at > parent.LastSeq {
			return model.Invalid(model.FieldError{Field: "at_seq",
				Message: "is beyond the parent's last seq " + strconv.FormatInt(parent.LastSeq, 10)})
		}
		var t forkTotalsPG
		if at > 0 {
			if t, err = forkTotalsAtPG(ctx, tx, tenant, parentID, at); err != nil {
				return err
			}
		}
		now := model.Now()
		fork = model.Session{ID: in.ID, AgentID: parent.AgentID, UserID: parent.UserID, Title: parent.Title, Status: model.StatusCreated,
			Metadata: parent.Metadata, MessageCount: at, LastSeq: at, TotalTokens: t.tokens, TotalCost: t.cost, TurnCount: t.turns,
			ParentID: &parent.ID, ForkedAtSeq: &at, CreatedAt: now, UpdatedAt: now}
		if fork.ID == "" {
			fork.ID = newID(model.PrefixSession)
		}
		if in.Title != nil {
			fork.Title = in.Title
		}
		if in.Metadata != nil {
			fork.Metadata = in.Metadata
		}
		// Placed again when another process took the id meanwhile, as
		// CreateSession does.
		for try := 0; ; try++ {
			if in.ID != "" {
				if fork.ID, err = repo.PlaceSession(in.ID, parent.UserID, in.UserSpace, sessionHolderPG(ctx, tx, tenant)); err != nil {
					return err
				}
			}
			// ON CONFLICT rather than catching the unique violation, as
			// CreateSession: the server would log every taken id as an error.
			tag, err := tx.Exec(ctx, `INSERT INTO sessions (tenant_id, id, agent_id, title, status, metadata, message_count, last_seq,
				total_tokens, total_cost, turn_count, parent_id, forked_at_seq, prefix_shared, created_at, updated_at, user_id)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $7, 1, $12, $12, $13) ON CONFLICT DO NOTHING`,
				tenant, fork.ID, fork.AgentID, fork.Title, string(fork.Status), fork.Metadata.String(), at,
				t.tokens, t.cost, t.turns, parentID, int64(now), fork.UserID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				break
			}
			if !in.UserSpace || try == 2 {
				return repo.SessionTaken(fork.ID)
			}
		}
		if err := forkCopyCompactionsPG(ctx, tx, tenant, parentID, fork.ID, at); err != nil {
			return err
		}
		if from != nil {
			c, st := ckstore.ForkCopy(*from, fork.ID, newID(model.PrefixCheckpoint))
			if err := insertCheckpointPG(ctx, tx, tenant, c, st); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO checkpoint_writes (tenant_id, session_id, namespace, checkpoint_id, task_id, idx,
				channel, task_path, value, created_at)
				SELECT tenant_id, $1, namespace, checkpoint_id, task_id, idx, channel, task_path, value, created_at FROM checkpoint_writes
				WHERE tenant_id = $2 AND session_id = $3 AND namespace = $4 AND checkpoint_id = $5`,
				fork.ID, tenant, parentID, c.Namespace, c.ClientID); err != nil {
				return err
			}
		}
		stored, err := getSessionTx(ctx, tx, tenant, fork.ID, "")
		if err != nil {
			return err
		}
		return recordEventPG(ctx, tx, tenant, fork.ID, model.EventSessionCreated, repo.SessionEventData(stored))
	})
	if err != nil {
		return model.Session{}, err
	}
	return fork, nil
}

// forkTotalsAtPG reads the running totals of the message at seq in the
// session's lineage. A lineage without that seq is damaged: Internal, as on
// SQLite.
func forkTotalsAtPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, seq int64) (forkTotalsPG, error) {
	segs, err := lineagePG(ctx, tx, tenant, sessionID)
	if err != nil {
		return forkTotalsPG{}, err
	}
	for _, g := range segs {
		if seq <= g.lo || seq > g.hi {
			continue
		}
		var t forkTotalsPG
		err := tx.QueryRow(ctx, `SELECT cum_tokens, cum_cost, cum_turns FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq = $3`, tenant, g.owner, seq).Scan(&t.tokens, &t.cost, &t.turns)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return forkTotalsPG{}, err
		}
		t.cost = finiteCostPG(t.cost)
		return t, nil
	}
	return forkTotalsPG{}, model.Internal(fmt.Errorf("session %s: no message at seq %d of its lineage", sessionID, seq))
}

// forkCopyCompactionsPG gives a fork the parent's compactions that lie within
// its prefix, numbered from 1 with new ids, so that its context reads as the
// parent's did at the fork point.
func forkCopyCompactionsPG(ctx context.Context, tx pgx.Tx, tenant, parent, fork string, at int64) error {
	rows, err := tx.Query(ctx, `SELECT n FROM compactions WHERE tenant_id = $1 AND session_id = $2 AND through_seq <= $3
		ORDER BY n`, tenant, parent, at)
	if err != nil {
		return err
	}
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ns) == 0 {
		return err
	}
	b := &pgx.Batch{}
	for i, n := range ns {
		b.Queue(`INSERT INTO compactions (tenant_id, session_id, n, id, through_seq, summary, summary_parts,
			tokens, model, provider_item, created_at)
			SELECT tenant_id, $3, $4, $5, through_seq, summary, summary_parts, tokens, model, provider_item, created_at
			FROM compactions WHERE tenant_id = $1 AND session_id = $2 AND n = $6`,
			tenant, parent, fork, int64(i+1), newID(model.PrefixCompaction), n)
	}
	return appendSendPG(ctx, tx, b)
}

// forkLockSharingPG locks and lists, in id order (bytewise, so that every
// process locks them in one order), the forks that read part of their history
// from id's rows; with past >= 0, only those that share id's messages past
// that seq (a rewind's), with past < 0 all of them (a purge's).
func forkLockSharingPG(ctx context.Context, tx pgx.Tx, tenant, id string, past int64) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM sessions
		WHERE tenant_id = $1 AND parent_id = $2 AND prefix_shared = 1 AND ($3 < 0 OR forked_at_seq > $3)
		ORDER BY id COLLATE "C" FOR UPDATE`, tenant, id, past)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// forkDetachPG makes a fork store its inherited prefix itself: every message
// of its lineage below its own segment is copied under the fork's id (new ids
// and gids, same seqs and running totals; the search trigger indexes the
// copies), and the fork stops sharing. The caller holds the fork's row lock
// (forkLockSharingPG).
func forkDetachPG(ctx context.Context, tx pgx.Tx, tenant, fork string) error {
	segs, err := lineagePG(ctx, tx, tenant, fork)
	if err != nil {
		return err
	}
	for _, g := range segs {
		if g.owner == fork {
			continue
		}
		if err := forkCopySegmentPG(ctx, tx, tenant, fork, g); err != nil {
			return err
		}
		// The copies are the fork's now: their usage is (the parent's goes
		// when its rows do).
		if err := addUsagePG(ctx, tx, tenant, fork, g.lo, g.hi); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `UPDATE sessions SET prefix_shared = 0 WHERE tenant_id = $1 AND id = $2`, tenant, fork)
	return err
}

// forkCopySegmentPG copies one stored segment of a lineage under fork,
// forkCopyChunkPG rows a statement, with what describes the rows: file
// references and the tool-call index. Idempotency keys stay behind: they
// belong to the session that was asked.
func forkCopySegmentPG(ctx context.Context, tx pgx.Tx, tenant, fork string, g lineageSegment) error {
	after := g.lo
	for after < g.hi {
		rows, err := tx.Query(ctx, `SELECT seq FROM messages WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4
			ORDER BY seq LIMIT $5`, tenant, g.owner, after, g.hi, forkCopyChunkPG)
		if err != nil {
			return err
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(seqs) == 0 {
			break
		}
		ids := make([]string, len(seqs))
		for i := range ids {
			ids[i] = newID(model.PrefixMessage)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO messages (tenant_id, session_id, seq, id, role, content, name, tool_calls,
			tool_call_id, agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash,
			gid, cum_tokens, cum_cost, parts, is_error, provider_item, cum_turns, client_id)
			SELECT m.tenant_id, $3, m.seq, u.id, m.role, m.content, m.name, m.tool_calls,
			m.tool_call_id, m.agent_id, m.model, m.tokens, m.cost, m.metadata, m.created_at, NULL, NULL,
			nextval('messages_gid'), m.cum_tokens, m.cum_cost, m.parts, m.is_error, m.provider_item, m.cum_turns, m.client_id
			FROM unnest($4::bigint[], $5::text[]) AS u(seq, id)
			JOIN messages m ON m.tenant_id = $1 AND m.session_id = $2 AND m.seq = u.seq
			ORDER BY m.seq`, tenant, g.owner, fork, seqs, ids); err != nil {
			return fmt.Errorf("copy seqs %d..%d of %s into fork %s: %w", seqs[0], seqs[len(seqs)-1], g.owner, fork, err)
		}
		after = seqs[len(seqs)-1]
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO message_files (tenant_id, session_id, seq, file_id, user_id)
		SELECT tenant_id, $2, seq, file_id, user_id FROM message_files WHERE tenant_id = $1 AND session_id = $3 AND seq > $4 AND seq <= $5
		ON CONFLICT DO NOTHING`, tenant, fork, g.owner, g.lo, g.hi)
	for _, table := range []string{"tool_calls", "tool_results"} {
		b.Queue(`INSERT INTO `+table+` (tenant_id, session_id, call_id, seq)
			SELECT tenant_id, $2, call_id, seq FROM `+table+` WHERE tenant_id = $1 AND session_id = $3 AND seq > $4 AND seq <= $5
			ON CONFLICT DO NOTHING`, tenant, fork, g.owner, g.lo, g.hi)
	}
	return appendSendPG(ctx, tx, b)
}
