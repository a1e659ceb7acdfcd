package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// ClaimEmbeddings visits the tenants with pending texts round robin (see
// repo.EmbeddingClaim) in one transaction that pushes the due time of what
// it takes lease ahead; SKIP LOCKED lets the workers of several Logbook
// processes claim apart.
func (s *Store) ClaimEmbeddings(ctx context.Context, c repo.EmbeddingClaim) ([]model.EmbeddingJob, error) {
	var due bool
	now := int64(model.Now())
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM passages WHERE embedding_state = 'pending' AND embedding_due <= $1)
		OR EXISTS (SELECT 1 FROM message_embeddings WHERE state = 'pending' AND due <= $1)
		OR EXISTS (SELECT 1 FROM item_vectors WHERE state = 'pending' AND due <= $1)`, now).Scan(&due); err != nil || !due {
		return nil, mapErr(err) // nothing due: no write
	}
	var jobs []model.EmbeddingJob
	err := s.tx(ctx, func(tx pgx.Tx) error {
		now := int64(model.Now())
		next := func(after string) (string, error) {
			var t string
			err := tx.QueryRow(ctx, `SELECT coalesce(least(
				(SELECT min(tenant_id) FROM passages WHERE embedding_state = 'pending' AND tenant_id > $1),
				(SELECT min(tenant_id) FROM message_embeddings WHERE state = 'pending' AND tenant_id > $1),
				(SELECT min(tenant_id) FROM item_vectors WHERE state = 'pending' AND tenant_id > $1)), '')`, after).Scan(&t)
			return t, err
		}
		take := func(tenant string, n int) ([]model.EmbeddingJob, error) {
			return claimTenantEmbeddingsPG(ctx, tx, tenant, n, now, now+c.Lease.Milliseconds())
		}
		var err error
		jobs, err = repo.WalkEmbeddingClaim(c, next, take)
		return err
	})
	return jobs, err
}

// claimTenantEmbeddingsPG takes up to n of tenant's due passages, then
// messages, and leases them until until.
func claimTenantEmbeddingsPG(ctx context.Context, tx pgx.Tx, tenant string, n int, now, until int64) ([]model.EmbeddingJob, error) {
	type claimed struct {
		model.EmbeddingJob
		gone bool // the message was removed (a rewind, a purge): nothing to embed
	}
	scan := func(q string, limit int) ([]claimed, error) {
		rows, err := tx.Query(ctx, q, tenant, now, limit)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
			var (
				j   claimed
				cfg *string
			)
			if err := r.Scan(&j.Tenant, &j.AgentID, &j.ID, &j.SessionID, &j.Seq, &j.Text, &j.Attempts, &cfg, &j.gone); err != nil {
				return j, err
			}
			var err error
			j.Config, err = repo.DecodeEmbeddingConfig(cfg)
			return j, err
		})
	}
	got, err := scan(`SELECT p.tenant_id, p.agent_id, p.id, '', 0::bigint, p.content, p.embedding_attempts,
			coalesce(a.embedding_config, t.embedding_config)::text, false
		FROM passages p JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
		LEFT JOIN tenant_embedding t ON t.tenant_id = p.tenant_id
		WHERE p.tenant_id = $1 AND p.embedding_state = 'pending' AND p.embedding_due <= $2 ORDER BY p.embedding_due LIMIT $3
		FOR UPDATE OF p SKIP LOCKED`, n)
	if err != nil {
		return nil, err
	}
	if len(got) < n {
		msgs, err := scan(`SELECT e.tenant_id, e.agent_id, e.message_id, e.session_id, e.seq, coalesce(m.content, ''), e.attempts,
				coalesce(a.embedding_config, t.embedding_config)::text, m.id IS NULL
			FROM message_embeddings e
			LEFT JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
			LEFT JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
			LEFT JOIN tenant_embedding t ON t.tenant_id = e.tenant_id
			WHERE e.tenant_id = $1 AND e.state = 'pending' AND e.due <= $2 ORDER BY e.due LIMIT $3
			FOR UPDATE OF e SKIP LOCKED`, n-len(got))
		if err != nil {
			return nil, err
		}
		got = append(got, msgs...)
	}
	jobs := make([]model.EmbeddingJob, 0, len(got))
	for _, j := range got {
		if j.gone {
			if _, err := tx.Exec(ctx, `DELETE FROM message_embeddings WHERE tenant_id = $1 AND session_id = $2 AND seq = $3
				AND message_id = $4 AND state = 'pending'`, j.Tenant, j.SessionID, j.Seq, j.ID); err != nil {
				return nil, err
			}
			continue
		}
		if err := execEmbeddingPG(ctx, tx, j.EmbeddingJob, `embedding_due = $1`, `due = $1`, until); err != nil {
			return nil, err
		}
		jobs = append(jobs, j.EmbeddingJob)
	}
	if len(jobs) >= n {
		return jobs, nil
	}
	rows, err := tx.Query(ctx, `SELECT v.tenant_id, v.item_id, v.field, v.text, v.attempts, t.embedding_config::text
		FROM item_vectors v LEFT JOIN tenant_embedding t ON t.tenant_id = v.tenant_id
		WHERE v.tenant_id = $1 AND v.state = 'pending' AND v.due <= $2 ORDER BY v.due LIMIT $3
		FOR UPDATE OF v SKIP LOCKED`, tenant, now, n-len(jobs))
	if err != nil {
		return nil, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.EmbeddingJob, error) {
		var (
			j   = model.EmbeddingJob{Kind: model.JobItem}
			cfg *string
		)
		if err := r.Scan(&j.Tenant, &j.ID, &j.Field, &j.Text, &j.Attempts, &cfg); err != nil {
			return j, err
		}
		var err error
		j.Config, err = repo.DecodeEmbeddingConfig(cfg)
		return j, err
	})
	if err != nil {
		return nil, err
	}
	for _, j := range items {
		if err := execEmbeddingPG(ctx, tx, j, `embedding_due = $1`, `due = $1`, until); err != nil {
			return nil, err
		}
	}
	return append(jobs, items...), nil
}

// PendingEmbeddings: see repo.Embeddings.
func (s *Store) PendingEmbeddings(ctx context.Context) (passages, messages int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM passages WHERE embedding_state = 'pending'),
		(SELECT count(*) FROM message_embeddings WHERE state = 'pending')`).Scan(&passages, &messages)
	return passages, messages, mapErr(err)
}

// execEmbeddingPG updates a job's row as sqlite's execEmbedding does; the
// SET clauses use $1… for args, the row's key follows them.
func execEmbeddingPG(ctx context.Context, tx pgx.Tx, j model.EmbeddingJob, passageSet, messageSet string, args ...any) error {
	n := len(args)
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	var err error
	if j.Kind == model.JobItem {
		_, err = tx.Exec(ctx, `UPDATE item_vectors SET `+messageSet+` WHERE tenant_id = `+p(1)+` AND item_id = `+p(2)+
			` AND field = `+p(3)+` AND text = `+p(4)+` AND state = 'pending'`, append(args, j.Tenant, j.ID, j.Field, j.Text)...)
		return err
	}
	if j.SessionID == "" {
		_, err = tx.Exec(ctx, `UPDATE passages SET `+passageSet+` WHERE tenant_id = `+p(1)+` AND agent_id = `+p(2)+` AND id = `+p(3)+`
			AND embedding_state = 'pending'`, append(args, j.Tenant, j.AgentID, j.ID)...)
	} else {
		_, err = tx.Exec(ctx, `UPDATE message_embeddings SET `+messageSet+` WHERE tenant_id = `+p(1)+` AND session_id = `+p(2)+
			` AND seq = `+p(3)+` AND message_id = `+p(4)+` AND state = 'pending'`, append(args, j.Tenant, j.SessionID, j.Seq, j.ID)...)
	}
	return err
}

// SaveEmbeddings stores the worker's results in one transaction.
func (s *Store) SaveEmbeddings(ctx context.Context, results []repo.EmbeddingOutcome, maxAttempts int) error {
	var stored []storedVectorPG
	err := s.tx(ctx, func(tx pgx.Tx) error {
		stored = stored[:0]
		for _, r := range results {
			if r.Deferred {
				if err := execEmbeddingPG(ctx, tx, r.Job, `embedding_due = $1`, `due = $1`, int64(r.RetryAt)); err != nil {
					return err
				}
				continue
			}
			if r.Job.Kind == model.JobItem {
				if err := saveItemEmbeddingPG(ctx, tx, r, maxAttempts); err != nil {
					return err
				}
				continue
			}
			if r.Err == "" {
				msg, err := pinServerEmbeddingPG(ctx, tx, r)
				if err != nil {
					return err
				}
				if msg == "" {
					err = execEmbeddingPG(ctx, tx, r.Job,
						`embedding = $1, embedding_model = $2, embedding_state = 'ready', embedding_error = NULL, embedding_due = NULL, embedding_attempts = embedding_attempts + 1`,
						`embedding = $1, model = $2, state = 'ready', error = NULL, due = NULL, attempts = attempts + 1`,
						repo.EncodeVector(r.Vector), r.Model)
					if err != nil {
						return err
					}
					if r.Job.SessionID == "" {
						sv := storedVectorPG{tenant: r.Job.Tenant, agent: r.Job.AgentID, row: vecindex.Row{ID: r.Job.ID, Vector: r.Vector}}
						var created, expires int64
						if err := tx.QueryRow(ctx, `SELECT a.vec_version, p.created_at, coalesce(p.expires_at, 0)
							FROM passages p JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
							WHERE p.tenant_id = $1 AND p.agent_id = $2 AND p.id = $3`, r.Job.Tenant, r.Job.AgentID, r.Job.ID).
							Scan(&sv.version, &created, &expires); err != nil {
							return err
						}
						sv.row.CreatedAt, sv.row.ExpiresAt = model.Time(created), model.Time(expires)
						stored = append(stored, sv)
					}
					continue
				}
				r.Err, r.Permanent = msg, true
			}
			state, due := repo.EmbeddingRetry(r, maxAttempts)
			if err := execEmbeddingPG(ctx, tx, r.Job,
				`embedding_state = $1, embedding_error = $2, embedding_due = $3, embedding_attempts = embedding_attempts + 1`,
				`state = $1, error = $2, due = $3, attempts = attempts + 1`, state, r.Err, due); err != nil {
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

// storedVectorPG is a passage the worker embedded, with the vec_version its
// write made.
type storedVectorPG struct {
	tenant, agent string
	version       int64
	row           vecindex.Row
}

// pinServerEmbeddingPG is sqlite's pinServerEmbedding, under the agent's row
// lock so that two first embeddings cannot both pin.
func pinServerEmbeddingPG(ctx context.Context, tx pgx.Tx, r repo.EmbeddingOutcome) (string, error) {
	var (
		pinned *string
		dims   *int
	)
	err := tx.QueryRow(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE`,
		r.Job.Tenant, r.Job.AgentID).Scan(&pinned, &dims)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if pinned != nil && dims != nil {
		return repo.PinMismatch(*pinned, *dims, r), nil
	}
	_, err = tx.Exec(ctx, `UPDATE agents SET embedding_model = $3, embedding_dims = $4 WHERE tenant_id = $1 AND id = $2`,
		r.Job.Tenant, r.Job.AgentID, r.Model, len(r.Vector))
	return "", err
}

// QueueMessageEmbeddings is sqlite's, over the numbered events; the cursor's
// row lock keeps two processes from reading the same stretch twice.
func (s *Store) QueueMessageEmbeddings(ctx context.Context, serverDefault bool, limit int) (int, error) {
	if !serverDefault {
		var named bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE embedding_config IS NOT NULL) OR EXISTS (SELECT 1 FROM tenant_embedding)`).Scan(&named); err != nil || !named {
			return 0, mapErr(err) // no agent names an endpoint: the log waits for one that will
		}
	}
	n := 0
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var from, to int64
		if err := tx.QueryRow(ctx, `SELECT pos FROM embedding_cursor FOR UPDATE`).Scan(&from); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(max(pos), $1) FROM
			(SELECT pos FROM events WHERE pos > $1 ORDER BY pos LIMIT $2) e`, from, limit).Scan(&n, &to); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, due)
			SELECT ev.tenant_id, ev.session_id, ev.seq, ev.message_id, s.agent_id, 'pending', $1::bigint
			FROM events ev
			JOIN sessions s ON s.tenant_id = ev.tenant_id AND s.id = ev.session_id
			JOIN messages m ON m.tenant_id = ev.tenant_id AND m.session_id = ev.session_id AND m.seq = ev.seq AND m.id = ev.message_id
			LEFT JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
			LEFT JOIN tenant_embedding t ON t.tenant_id = s.tenant_id
			WHERE ev.pos > $2 AND ev.pos <= $3 AND ev.type = $4 AND s.agent_id IS NOT NULL AND m.content <> ''
				AND (a.embedding_config IS NOT NULL OR t.tenant_id IS NOT NULL OR $5::boolean)
			ON CONFLICT (tenant_id, session_id, seq) DO UPDATE SET message_id = excluded.message_id, agent_id = excluded.agent_id,
				state = 'pending', model = NULL, embedding = NULL, error = NULL, attempts = 0, due = excluded.due
			WHERE message_embeddings.message_id <> excluded.message_id`,
			int64(model.Now()), from, to, string(model.EventMessageAppended), serverDefault); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE embedding_cursor SET pos = $1`, to)
		return err
	})
	return n, err
}

// saveItemEmbeddingPG is SQLite's saveItemEmbedding.
func saveItemEmbeddingPG(ctx context.Context, tx pgx.Tx, r repo.EmbeddingOutcome, maxAttempts int) error {
	var err error
	if r.Err == "" {
		err = execEmbeddingPG(ctx, tx, r.Job, "", `embedding = $1, model = $2, state = 'ready', error = NULL, due = NULL, attempts = attempts + 1`,
			repo.EncodeVector(r.Vector), r.Model)
	} else {
		state, due := repo.EmbeddingRetry(r, maxAttempts)
		err = execEmbeddingPG(ctx, tx, r.Job, "", `state = $1, error = $2, due = $3, attempts = attempts + 1`, state, r.Err, due)
	}
	if err != nil {
		return err
	}
	return itemEmbeddingStatePG(ctx, tx, r.Job.Tenant, r.Job.ID)
}
