package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// itemLivePG keeps out items past their expires_at (the placeholder n, now),
// as SQLite's itemLive.
func itemLivePG(n string) string {
	return `(i.expires_at IS NULL OR i.expires_at > ` + n + `::bigint)`
}

func scanItemPG(row pgx.Row) (model.Item, error) {
	var r repo.ItemRow
	if err := row.Scan(r.Dest()...); err != nil {
		return model.Item{}, err
	}
	return r.Item()
}

// GetItem reads one live item; with refreshTTL, an item with a TTL has its
// expires_at moved ahead first. Errors: KindNotFound.
func (s *Store) GetItem(ctx context.Context, tenant string, ref model.ItemRef, refreshTTL bool) (model.Item, error) {
	if err := s.faults.Check(repo.PointItemRead); err != nil {
		return model.Item{}, err
	}
	it, err := scanItemPG(s.pool.QueryRow(ctx, `SELECT `+repo.ItemColumns+` FROM items i
		WHERE i.tenant_id = $1 AND i.user_id = $2 AND i.namespace = $3 AND i.key = $4 AND `+itemLivePG("$5"),
		tenant, ref.UserID, model.JoinNamespace(ref.Namespace), ref.Key, int64(model.Now())))
	if errors.Is(err, pgx.ErrNoRows) {
		return it, model.NotFound("item", ref.Key)
	}
	if err != nil || !refreshTTL || it.TTLSeconds == nil {
		return it, mapErr(err)
	}
	out, err := s.WriteItems(ctx, tenant, []model.ItemWrite{{Ref: ref, Touch: true, At: model.Now()}})
	if err != nil {
		return model.Item{}, err
	}
	if out[0].Item.Key == "" {
		return model.Item{}, model.NotFound("item", ref.Key)
	}
	return out[0].Item, nil
}

// WriteItems applies the writes in order in one transaction, as SQLite's
// (repo.Items); each item's row is locked by its first read.
func (s *Store) WriteItems(ctx context.Context, tenant string, writes []model.ItemWrite) ([]model.ItemWritten, error) {
	var out []model.ItemWritten
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		out = out[:0]
		w := itemWriterPG{ctx: ctx, tx: tx, tenant: tenant, now: model.Now()}
		for i, wr := range writes {
			if err := s.faults.Check(repo.PointItemWrite); err != nil {
				return err
			}
			res, err := w.apply(wr)
			if err != nil {
				return repo.ItemWriteError(i, err)
			}
			out = append(out, res)
		}
		return nil
	})
	return out, err
}

type itemWriterPG struct {
	ctx      context.Context
	tx       pgx.Tx
	tenant   string
	now      model.Time
	endpoint *bool
}

func (w *itemWriterPG) apply(wr model.ItemWrite) (model.ItemWritten, error) {
	ns := model.JoinNamespace(wr.Ref.Namespace)
	var (
		id      string
		version int64
		created int64
		expires *int64
	)
	if !wr.Touch {
		// Two first puts of one key must not both insert: the second waits
		// for the first's row (ON CONFLICT below), and this lock orders
		// writers of a row that exists.
		if _, err := w.tx.Exec(w.ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
			w.tenant+"\x1f"+wr.Ref.UserID+"\x1f"+ns+"\x1f"+wr.Ref.Key); err != nil {
			return model.ItemWritten{}, err
		}
	}
	err := w.tx.QueryRow(w.ctx, `SELECT id, version, created_at, expires_at FROM items
		WHERE tenant_id = $1 AND user_id = $2 AND namespace = $3 AND key = $4 FOR UPDATE`, w.tenant, wr.Ref.UserID, ns, wr.Ref.Key).
		Scan(&id, &version, &created, &expires)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return model.ItemWritten{}, err
	}
	exists := err == nil
	live := exists && (expires == nil || *expires > int64(w.now))
	have := int64(0)
	if live {
		have = version
	}
	if wr.Touch {
		if !live {
			return model.ItemWritten{}, nil
		}
		if _, err := w.tx.Exec(w.ctx, `UPDATE items SET expires_at = $1 + ttl_seconds * 1000
			WHERE tenant_id = $2 AND id = $3 AND ttl_seconds IS NOT NULL`, int64(wr.At), w.tenant, id); err != nil {
			return model.ItemWritten{}, err
		}
		it, err := w.read(id)
		return model.ItemWritten{Item: it}, err
	}
	if err := wr.Fence.Check(wr.Ref, have); err != nil {
		return model.ItemWritten{}, err
	}
	if exists && (!live || wr.Delete) {
		if err := w.erase(id); err != nil {
			return model.ItemWritten{}, err
		}
	}
	if wr.Delete {
		return model.ItemWritten{Deleted: live}, nil
	}
	if live {
		version++
	} else {
		id, version, created = newID(model.PrefixItem), 1, int64(w.now)
	}
	var texts []model.ItemText
	if wr.Put.IndexPaths() != nil {
		ep, err := w.hasEndpoint()
		if err != nil {
			return model.ItemWritten{}, err
		}
		texts = repo.ItemTextsToEmbed(wr.Put, ep || wr.Put.ServerEmbeds)
	}
	var exp *int64
	if e := wr.Put.Expiry(w.now); e != nil {
		v := int64(*e)
		exp = &v
	}
	if _, err := w.tx.Exec(w.ctx, `INSERT INTO items (tenant_id, user_id, namespace, key, id, value, index_paths,
		version, created_at, updated_at, expires_at, ttl_seconds) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (tenant_id, user_id, namespace, key) DO UPDATE SET value = excluded.value,
			index_paths = excluded.index_paths, version = excluded.version, updated_at = excluded.updated_at,
			expires_at = excluded.expires_at, ttl_seconds = excluded.ttl_seconds`,
		w.tenant, wr.Ref.UserID, ns, wr.Ref.Key, id, wr.Put.Value.String(), repo.EncodeIndexPaths(wr.Put),
		version, created, int64(w.now), exp, wr.Put.TTLSeconds); err != nil {
		return model.ItemWritten{}, err
	}
	if err := w.vectors(id, texts); err != nil {
		return model.ItemWritten{}, err
	}
	it, err := w.read(id)
	return model.ItemWritten{Item: it, Created: !live}, err
}

// vectors is SQLite's itemWriter.vectors.
func (w *itemWriterPG) vectors(id string, texts []model.ItemText) error {
	keep := make(map[string]string, len(texts))
	for _, t := range texts {
		keep[t.Field] = t.Text
	}
	rows, err := w.tx.Query(w.ctx, `SELECT field, text FROM item_vectors WHERE tenant_id = $1 AND item_id = $2`, w.tenant, id)
	if err != nil {
		return err
	}
	old, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var ft [2]string
		return ft, r.Scan(&ft[0], &ft[1])
	})
	if err != nil {
		return err
	}
	same := map[string]bool{}
	for _, ft := range old {
		text, ok := keep[ft[0]]
		switch {
		case !ok:
			_, err = w.tx.Exec(w.ctx, `DELETE FROM item_vectors WHERE tenant_id = $1 AND item_id = $2 AND field = $3`, w.tenant, id, ft[0])
		case text == ft[1]:
			same[ft[0]] = true
		}
		if err != nil {
			return err
		}
	}
	for _, t := range texts {
		if same[t.Field] {
			continue
		}
		if _, err := w.tx.Exec(w.ctx, `INSERT INTO item_vectors (tenant_id, item_id, field, text, state, due)
			VALUES ($1, $2, $3, $4, 'pending', $5)
			ON CONFLICT (tenant_id, item_id, field) DO UPDATE SET text = excluded.text,
				state = 'pending', model = NULL, embedding = NULL, error = NULL, attempts = 0, due = excluded.due`,
			w.tenant, id, t.Field, t.Text, int64(w.now)); err != nil {
			return err
		}
	}
	return itemEmbeddingStatePG(w.ctx, w.tx, w.tenant, id)
}

// itemEmbeddingStatePG is SQLite's itemEmbeddingState.
func itemEmbeddingStatePG(ctx context.Context, tx pgx.Tx, tenant, id string) error {
	_, err := tx.Exec(ctx, `UPDATE items SET
		embedding_state = (SELECT CASE WHEN count(*) = 0 THEN NULL WHEN bool_or(v.state = 'failed') THEN 'failed'
			WHEN bool_or(v.state = 'pending') THEN 'pending' ELSE 'ready' END
			FROM item_vectors v WHERE v.tenant_id = items.tenant_id AND v.item_id = items.id),
		embedding_error = (SELECT v.error FROM item_vectors v WHERE v.tenant_id = items.tenant_id AND v.item_id = items.id
			AND v.state = 'failed' ORDER BY v.field COLLATE "C" LIMIT 1)
		WHERE tenant_id = $1 AND id = $2`, tenant, id)
	return err
}

func (w *itemWriterPG) read(id string) (model.Item, error) {
	return scanItemPG(w.tx.QueryRow(w.ctx, `SELECT `+repo.ItemColumns+` FROM items i WHERE i.tenant_id = $1 AND i.id = $2`, w.tenant, id))
}

func (w *itemWriterPG) erase(id string) error {
	if _, err := w.tx.Exec(w.ctx, `DELETE FROM item_vectors WHERE tenant_id = $1 AND item_id = $2`, w.tenant, id); err != nil {
		return err
	}
	_, err := w.tx.Exec(w.ctx, `DELETE FROM items WHERE tenant_id = $1 AND id = $2`, w.tenant, id)
	return err
}

func (w *itemWriterPG) hasEndpoint() (bool, error) {
	if w.endpoint == nil {
		var named bool
		if err := w.tx.QueryRow(w.ctx, `SELECT EXISTS (SELECT 1 FROM tenant_embedding WHERE tenant_id = $1)`, w.tenant).Scan(&named); err != nil {
			return false, err
		}
		w.endpoint = &named
	}
	return *w.endpoint, nil
}

// ItemBatch runs a batch (repo.RunItemBatch).
func (s *Store) ItemBatch(ctx context.Context, tenant, user string, reqs []model.ItemRequest) ([]model.ItemResult, error) {
	return repo.RunItemBatch(ctx, s, tenant, user, reqs)
}
