package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// ClaimEmbeddings visits the tenants with pending texts round robin (see
// repo.EmbeddingClaim) in one write that pushes the due time of what it
// takes lease ahead.
func (s *Store) ClaimEmbeddings(ctx context.Context, c repo.EmbeddingClaim) ([]model.EmbeddingJob, error) {
	var due bool
	now := int64(model.Now())
	if err := s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM passages WHERE embedding_state = 'pending' AND embedding_due <= ?1)
		OR EXISTS (SELECT 1 FROM message_embeddings WHERE state = 'pending' AND due <= ?1)
		OR EXISTS (SELECT 1 FROM item_vectors WHERE state = 'pending' AND due <= ?1)`, now).Scan(&due); err != nil || !due {
		return nil, mapErr(err) // nothing due: no write
	}
	var jobs []model.EmbeddingJob
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := int64(model.Now())
		next := func(after string) (string, error) {
			var t string
			err := tx.QueryRowContext(ctx, `SELECT coalesce(min(t), '') FROM (
				SELECT min(tenant_id) AS t FROM passages WHERE embedding_state = 'pending' AND tenant_id > ?1
				UNION ALL SELECT min(tenant_id) FROM message_embeddings WHERE state = 'pending' AND tenant_id > ?1
				UNION ALL SELECT min(tenant_id) FROM item_vectors WHERE state = 'pending' AND tenant_id > ?1)`, after).Scan(&t)
			return t, err
		}
		take := func(tenant string, n int) ([]model.EmbeddingJob, error) {
			return claimTenantEmbeddings(ctx, tx, tenant, n, now, now+c.Lease.Milliseconds())
		}
		var err error
		jobs, err = repo.WalkEmbeddingClaim(c, next, take)
		return err
	})
	return jobs, err
}

// claimTenantEmbeddings takes up to n of tenant's due passages, then
// messages, then item texts, and leases them until until.
func claimTenantEmbeddings(ctx context.Context, tx *sql.Tx, tenant string, n int, now, until int64) ([]model.EmbeddingJob, error) {
	rows, err := tx.QueryContext(ctx, `SELECT p.tenant_id, p.agent_id, p.id, '', 0, p.content, p.embedding_attempts,
			coalesce(a.embedding_config, t.embedding_config), 0
		FROM passages p JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
		LEFT JOIN tenant_embedding t ON t.tenant_id = p.tenant_id
		WHERE p.tenant_id = ? AND p.embedding_state = 'pending' AND p.embedding_due <= ? ORDER BY p.embedding_due LIMIT ?`, tenant, now, n)
	if err != nil {
		return nil, err
	}
	claimed, err := collect(rows, scanEmbeddingJob)
	if err != nil {
		return nil, err
	}
	jobs := make([]model.EmbeddingJob, 0, len(claimed))
	for _, c := range claimed {
		jobs = append(jobs, c.EmbeddingJob)
	}
	if len(jobs) >= n {
		return leaseEmbeddings(ctx, tx, jobs, until)
	}
	// A pending message that a rewind or purge removed has nothing to embed:
	// it is dropped when its turn comes.
	rows, err = tx.QueryContext(ctx, `SELECT e.tenant_id, e.agent_id, e.message_id, e.session_id, e.seq, coalesce(m.content, ''), e.attempts,
			coalesce(a.embedding_config, t.embedding_config), m.id IS NULL
		FROM message_embeddings e
		LEFT JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
		LEFT JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
		LEFT JOIN tenant_embedding t ON t.tenant_id = e.tenant_id
		WHERE e.tenant_id = ? AND e.state = 'pending' AND e.due <= ? ORDER BY e.due LIMIT ?`, tenant, now, n-len(jobs))
	if err != nil {
		return nil, err
	}
	msgs, err := collect(rows, scanEmbeddingJob)
	if err != nil {
		return nil, err
	}
	for _, j := range msgs {
		if j.gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM message_embeddings WHERE tenant_id = ? AND session_id = ? AND seq = ?
				AND message_id = ? AND state = 'pending'`, j.Tenant, j.SessionID, j.Seq, j.ID); err != nil {
				return nil, err
			}
			continue
		}
		jobs = append(jobs, j.EmbeddingJob)
	}
	if len(jobs) >= n {
		return leaseEmbeddings(ctx, tx, jobs, until)
	}
	rows, err = tx.QueryContext(ctx, `SELECT v.tenant_id, v.item_id, v.field, v.text, v.attempts, t.embedding_config
		FROM item_vectors v LEFT JOIN tenant_embedding t ON t.tenant_id = v.tenant_id
		WHERE v.tenant_id = ? AND v.state = 'pending' AND v.due <= ? ORDER BY v.due LIMIT ?`, tenant, now, n-len(jobs))
	if err != nil {
		return nil, err
	}
	items, err := collect(rows, scanItemJob)
	if err != nil {
		return nil, err
	}
	return leaseEmbeddings(ctx, tx, append(jobs, items...), until)
}

func leaseEmbeddings(ctx context.Context, tx *sql.Tx, jobs []model.EmbeddingJob, until int64) ([]model.EmbeddingJob, error) {
	for _, j := range jobs {
		if err := execEmbedding(ctx, tx, j, `embedding_due = ?`, `due = ?`, until); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// PendingEmbeddings: see repo.Embeddings.
func (s *Store) PendingEmbeddings(ctx context.Context) (passages, messages int64, err error) {
	err = s.rdb.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM passages WHERE embedding_state = 'pending'),
		(SELECT count(*) FROM message_embeddings WHERE state = 'pending')`).Scan(&passages, &messages)
	return passages, messages, mapErr(err)
}

// claimedJob is a job as a claim reads it; gone: its message was removed.
type claimedJob struct {
	model.EmbeddingJob
	gone bool
}

func scanEmbeddingJob(sc scanner) (claimedJob, error) {
	var (
		j   claimedJob
		cfg *string
	)
	if err := sc.Scan(&j.Tenant, &j.AgentID, &j.ID, &j.SessionID, &j.Seq, &j.Text, &j.Attempts, &cfg, &j.gone); err != nil {
		return j, err
	}
	var err error
	j.Config, err = repo.DecodeEmbeddingConfig(cfg)
	return j, err
}

// scanItemJob reads an item's text to embed, with the tenant's endpoint.
func scanItemJob(sc scanner) (model.EmbeddingJob, error) {
	var (
		j   = model.EmbeddingJob{Kind: model.JobItem}
		cfg *string
	)
	if err := sc.Scan(&j.Tenant, &j.ID, &j.Field, &j.Text, &j.Attempts, &cfg); err != nil {
		return j, err
	}
	var err error
	j.Config, err = repo.DecodeEmbeddingConfig(cfg)
	return j, err
}

// execEmbedding updates a job's row: a passage's with passageSet, a message's
// or an item text's with messageSet (their columns have the same names),
// each followed by args; only while the row still waits for this job
// (pending, and for a message the same message, for an item's text the same
// text: a put may have changed it since the claim).
func execEmbedding(ctx context.Context, tx *sql.Tx, j model.EmbeddingJob, passageSet, messageSet string, args ...any) error {
	var err error
	if j.Kind == model.JobItem {
		_, err = tx.ExecContext(ctx, `UPDATE item_vectors SET `+messageSet+` WHERE tenant_id = ? AND item_id = ? AND field = ?
			AND text = ? AND state = 'pending'`, append(args, j.Tenant, j.ID, j.Field, j.Text)...)
		return err
	}
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
			if r.Deferred {
				if err := execEmbedding(ctx, tx, r.Job, `embedding_due = ?`, `due = ?`, int64(r.RetryAt)); err != nil {
					return err
				}
				continue
			}
			if r.Job.Kind == model.JobItem {
				if err := saveItemEmbedding(ctx, tx, r, maxAttempts); err != nil {
					return err
				}
				continue
			}
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
				state = 'pending', model = NULL, embedding = NULL, error = NULL, attempts = 0, due = excluded.due
			WHERE message_embeddings.message_id <> excluded.message_id`,
			int64(model.Now()), from, to, serverDefault); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE embedding_cursor SET pos = ?`, to)
		return err
	})
	return n, err
}

// saveItemEmbedding stores the outcome of an item's text and sums it up in
// the item's embedding_state. An item's texts are pinned to nothing: each
// keeps the model that embedded it, and a search compares only those of
// its query's model.
func saveItemEmbedding(ctx context.Context, tx *sql.Tx, r repo.EmbeddingOutcome, maxAttempts int) error {
	var err error
	if r.Err == "" {
		err = execEmbedding(ctx, tx, r.Job, "", `embedding = ?, model = ?, state = 'ready', error = NULL, due = NULL, attempts = attempts + 1`,
			repo.EncodeVector(r.Vector), r.Model)
	} else {
		state, due := repo.EmbeddingRetry(r, maxAttempts)
		err = execEmbedding(ctx, tx, r.Job, "", `state = ?, error = ?, due = ?, attempts = attempts + 1`, state, r.Err, due)
	}
	if err != nil {
		return err
	}
	return itemEmbeddingState(ctx, tx, r.Job.Tenant, r.Job.ID)
}
