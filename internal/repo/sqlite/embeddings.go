package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// ClaimEmbeddings takes due passages, then due messages, in one write that
// pushes their due time lease ahead (see repo.Embeddings).
func (s *Store) ClaimEmbeddings(ctx context.Context, limit int, lease time.Duration) ([]model.EmbeddingJob, error) {
	var due bool
	now := int64(model.Now())
	if err := s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM passages WHERE embedding_state = 'pending' AND embedding_due <= ?1)
		OR EXISTS (SELECT 1 FROM message_embeddings WHERE state = 'pending' AND due <= ?1)`, now).Scan(&due); err != nil || !due {
		return nil, mapErr(err) // nothing due: no write
	}
	var jobs []model.EmbeddingJob
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		jobs = jobs[:0]
		now := int64(model.Now())
		// A pending message that a rewind or purge removed has nothing to embed.
		if _, err := tx.ExecContext(ctx, `DELETE FROM message_embeddings WHERE state = 'pending' AND due <= ?
			AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.tenant_id = message_embeddings.tenant_id
				AND m.session_id = message_embeddings.session_id AND m.seq = message_embeddings.seq
				AND m.id = message_embeddings.message_id)`, now); err != nil {
			return err
		}
		scan := func(q string) error {
			rows, err := tx.QueryContext(ctx, q, now, limit-len(jobs))
			if err != nil {
				return err
			}
			got, err := collect(rows, scanEmbeddingJob)
			jobs = append(jobs, got...)
			return err
		}
		if err := scan(`SELECT p.tenant_id, p.agent_id, p.id, '', 0, p.content, p.embedding_attempts, coalesce(a.embedding_config, t.embedding_config)
			FROM passages p JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
			LEFT JOIN tenant_embedding t ON t.tenant_id = p.tenant_id
			WHERE p.embedding_state = 'pending' AND p.embedding_due <= ? ORDER BY p.embedding_due LIMIT ?`); err != nil {
			return err
		}
		if len(jobs) < limit {
			if err := scan(`SELECT e.tenant_id, e.agent_id, e.message_id, e.session_id, e.seq, m.content, e.attempts, coalesce(a.embedding_config, t.embedding_config)
				FROM message_embeddings e
				JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
				LEFT JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
				LEFT JOIN tenant_embedding t ON t.tenant_id = e.tenant_id
				WHERE e.state = 'pending' AND e.due <= ? ORDER BY e.due LIMIT ?`); err != nil {
				return err
			}
		}
		until := now + lease.Milliseconds()
		for _, j := range jobs {
			if err := execEmbedding(ctx, tx, j, `embedding_due = ?`, `due = ?`, until); err != nil {
				return err
			}
		}
		return nil
	})
	return jobs, err
}

func scanEmbeddingJob(sc scanner) (model.EmbeddingJob, error) {
	var (
		j   model.EmbeddingJob
		cfg *string
	)
	if err := sc.Scan(&j.Tenant, &j.AgentID, &j.ID, &j.SessionID, &j.Seq, &j.Text, &j.Attempts, &cfg); err != nil {
		return j, err
	}
	var err error
	j.Config, err = repo.DecodeEmbeddingConfig(cfg)
	return j, err
}

// execEmbedding updates a job's row: a passage's with passageSet, a message's
// with messageSet, each followed by args; only while the row still waits for
// this job (pending, and for a message the same message).
func execEmbedding(ctx context.Context, tx *sql.Tx, j model.EmbeddingJob, passageSet, messageSet string, args ...any) error {
	var err error
	if j.SessionID == "" {
		_, err = tx.ExecContext(ctx, `UPDATE passages SET `+passageSet+` WHERE tenant_id = ? AND agent_id = ? AND id = ?
			AND embedding_state = 'pending'`, append(args, j.Tenant, j.AgentID, j.ID)...)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE message_embeddings SET `+messageSet+` WHERE tenant_id = ? AND session_id = ? AND seq = ?
			AND message_id = ? AND state = 'pending'`, append(args, j.Tenant, j.SessionID, j.Seq, j.ID)...)
	}
	return err
}

// SaveEmbeddings stores the worker's results in one write.
func (s *Store) SaveEmbeddings(ctx context.Context, results []repo.EmbeddingOutcome, maxAttempts int) error {
	var stored []storedVector
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		stored = stored[:0]
		for _, r := range results {
			if r.Err == "" {
				msg, err := pinServerEmbedding(ctx, tx, r)
				if err != nil {
					return err
				}
				if msg == "" {
					err = execEmbedding(ctx, tx, r.Job,
						`embedding = ?, embedding_model = ?, embedding_state = 'ready', embedding_error = NULL, embedding_due = NULL, embedding_attempts = embedding_attempts + 1`,
						`embedding = ?, model = ?, state = 'ready', error = NULL, due = NULL, attempts = attempts + 1`,
						repo.EncodeVector(r.Vector), r.Model)
					if err != nil {
						return err
					}
					if r.Job.SessionID == "" {
						sv := storedVector{tenant: r.Job.Tenant, agent: r.Job.AgentID, row: vecindex.Row{ID: r.Job.ID, Vector: r.Vector}}
						if err := tx.QueryRowContext(ctx, `SELECT a.vec_version, p.created_at, coalesce(p.expires_at, 0)
							FROM passages p JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
							WHERE p.tenant_id = ? AND p.agent_id = ? AND p.id = ?`, r.Job.Tenant, r.Job.AgentID, r.Job.ID).
							Scan(&sv.version, &sv.row.CreatedAt, &sv.row.ExpiresAt); err != nil {
							return err
						}
						stored = append(stored, sv)
					}
					continue
				}
				r.Err, r.Permanent = msg, true
			}
			state, due := repo.EmbeddingRetry(r, maxAttempts)
			if err := execEmbedding(ctx, tx, r.Job,
				`embedding_state = ?, embedding_error = ?, embedding_due = ?, embedding_attempts = embedding_attempts + 1`,
				`state = ?, error = ?, due = ?, attempts = attempts + 1`, state, r.Err, due); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for _, sv := range stored {
			s.vectors.Wrote(sv.tenant, sv.agent, sv.version-1, sv.version, []vecindex.Row{sv.row}, nil)
		}
	}
	return err
}

// storedVector is a passage the worker embedded, with the vec_version its
// write made.
type storedVector struct {
	tenant, agent string
	version       int64
	row           vecindex.Row
}

// pinServerEmbedding pins the agent's model and dimensions to r's if nothing
// has, or says why r cannot be stored beside the agent's other embeddings.
func pinServerEmbedding(ctx context.Context, tx *sql.Tx, r repo.EmbeddingOutcome) (string, error) {
	var (
		pinned *string
		dims   *int
	)
	err := tx.QueryRowContext(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = ? AND id = ?`,
		r.Job.Tenant, r.Job.AgentID).Scan(&pinned, &dims)
	if err == sql.ErrNoRows {
		return "", nil // a session's agent that is gone pins nothing
	}
	if err != nil {
		return "", err
	}
	if pinned != nil && dims != nil {
		return repo.PinMismatch(*pinned, *dims, r), nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE agents SET embedding_model = ?, embedding_dims = ? WHERE tenant_id = ? AND id = ?`,
		r.Model, len(r.Vector), r.Job.Tenant, r.Job.AgentID)
	return "", err
}

// QueueMessageEmbeddings makes the messages appended since the cursor
// pending, for sessions whose agent names an endpoint (any agent's, with
// serverDefault), and moves the cursor past the messages it read. It follows
// the messages by gid, as the live feed does (a message is its own event):
// those the session appended, not the copies a fork takes or imported ones.
func (s *Store) QueueMessageEmbeddings(ctx context.Context, serverDefault bool, limit int) (int, error) {
	if !serverDefault {
		var named bool
		if err := s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE embedding_config IS NOT NULL) OR EXISTS (SELECT 1 FROM tenant_embedding)`).Scan(&named); err != nil || !named {
			return 0, mapErr(err) // no agent names an endpoint: the log waits for one that will
		}
	}
	n := 0
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var from, to int64
		if err := tx.QueryRowContext(ctx, `SELECT pos FROM embedding_cursor`).Scan(&from); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(gid), ?) FROM
			(SELECT gid FROM messages INDEXED BY messages_by_gid WHERE gid > ? ORDER BY gid LIMIT ?)`, from, from, limit).Scan(&n, &to); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, due)
			SELECT m.tenant_id, m.session_id, m.seq, m.id, s.agent_id, 'pending', ?
			FROM messages m INDEXED BY messages_by_gid
			JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
			LEFT JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
			LEFT JOIN tenant_embedding t ON t.tenant_id = s.tenant_id
			WHERE m.gid > ? AND m.gid <= ? AND m.in_feed = 1 AND s.agent_id IS NOT NULL AND m.content <> ''
				AND (a.embedding_config IS NOT NULL OR t.tenant_id IS NOT NULL OR ?)
			ON CONFLICT (tenant_id, session_id, seq) DO UPDATE SET message_id = excluded.message_id, agent_id = excluded.agent_id,
				state = 'pending', model = NULL, embedding = NULL, error = NULL, attempts = 0, due = excluded.due`,
			int64(model.Now()), from, to, serverDefault); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE embedding_cursor SET pos = ?`, to)
		return err
	})
	return n, err
}
