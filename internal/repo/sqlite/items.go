package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// itemLive keeps out items past their expires_at, as passageLive does
// passages: hidden until the expiry sweep erases them.
const itemLive = `(i.expires_at IS NULL OR i.expires_at > ?)`

func scanItem(sc scanner) (model.Item, error) {
	var r repo.ItemRow
	if err := sc.Scan(r.Dest()...); err != nil {
		return model.Item{}, err
	}
	return r.Item()
}

func getItem(ctx context.Context, q querier, tenant string, ref model.ItemRef, now model.Time) (model.Item, error) {
	it, err := scanItem(q.QueryRowContext(ctx, `SELECT `+repo.ItemColumns+` FROM items i
		WHERE i.tenant_id = ? AND i.user_id = ? AND i.namespace = ? AND i.key = ? AND `+itemLive,
		tenant, ref.UserID, model.JoinNamespace(ref.Namespace), ref.Key, int64(now)))
	if err == sql.ErrNoRows {
		return it, model.NotFound("item", ref.Key)
	}
	return it, mapErr(err)
}

// GetItem reads one live item; with refreshTTL, an item with a TTL has its
// expires_at moved ahead first, through the writer. Errors: KindNotFound.
func (s *Store) GetItem(ctx context.Context, tenant string, ref model.ItemRef, refreshTTL bool) (model.Item, error) {
	if err := s.faults.Check(repo.PointItemRead); err != nil {
		return model.Item{}, err
	}
	it, err := getItem(ctx, s.rdb, tenant, ref, model.Now())
	if err != nil || !refreshTTL || it.TTLSeconds == nil {
		return it, err
	}
	out, err := s.WriteItems(ctx, tenant, []model.ItemWrite{{Ref: ref, Touch: true, At: model.Now()}})
	if err != nil {
		return model.Item{}, err
	}
	if out[0].Item.Key == "" {
		return model.Item{}, model.NotFound("item", ref.Key) // expired or deleted meanwhile
	}
	return out[0].Item, nil
}

// WriteItems applies the writes in order in one writer transaction (see
// repo.Items). Errors: KindPrecondition, wrapped by repo.ItemWriteError.
func (s *Store) WriteItems(ctx context.Context, tenant string, writes []model.ItemWrite) ([]model.ItemWritten, error) {
	var out []model.ItemWritten
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out = out[:0]
		w := itemWriter{ctx: ctx, tx: tx, tenant: tenant, now: model.Now()}
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

// itemWriter applies one transaction's item writes.
type itemWriter struct {
	ctx      context.Context
	tx       *sql.Tx
	tenant   string
	now      model.Time
	endpoint *bool // whether the tenant names an embedding endpoint, once asked
}

func (w *itemWriter) apply(wr model.ItemWrite) (model.ItemWritten, error) {
	ns := model.JoinNamespace(wr.Ref.Namespace)
	var (
		id      string
		version int64
		created int64
		expires sql.NullInt64
	)
	err := w.tx.QueryRowContext(w.ctx, `SELECT id, version, created_at, expires_at FROM items
		WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ?`, w.tenant, wr.Ref.UserID, ns, wr.Ref.Key).
		Scan(&id, &version, &created, &expires)
	if err != nil && err != sql.ErrNoRows {
		return model.ItemWritten{}, err
	}
	exists := err == nil
	live := exists && (!expires.Valid || expires.Int64 > int64(w.now))
	have := int64(0)
	if live {
		have = version
	}
	if wr.Touch {
		if !live {
			return model.ItemWritten{}, nil
		}
		if _, err := w.tx.ExecContext(w.ctx, `UPDATE items SET expires_at = ? + ttl_seconds * 1000
			WHERE tenant_id = ? AND id = ? AND ttl_seconds IS NOT NULL`, int64(wr.At), w.tenant, id); err != nil {
			return model.ItemWritten{}, err
		}
		it, err := w.read(id)
		return model.ItemWritten{Item: it}, err
	}
	if err := wr.Fence.Check(wr.Ref, have); err != nil {
		return model.ItemWritten{}, err
	}
	if exists && (!live || wr.Delete) {
		// An expired item the sweep has not erased yet is gone already: a put
		// makes a new one.
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
	var ttl *int64
	if wr.Put.TTLSeconds != nil {
		ttl = wr.Put.TTLSeconds
	}
	var exp *int64
	if e := wr.Put.Expiry(w.now); e != nil {
		v := int64(*e)
		exp = &v
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO items (tenant_id, user_id, namespace, key, id, value, index_paths,
		version, created_at, updated_at, expires_at, ttl_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, user_id, namespace, key) DO UPDATE SET value = excluded.value,
			index_paths = excluded.index_paths, version = excluded.version, updated_at = excluded.updated_at,
			expires_at = excluded.expires_at, ttl_seconds = excluded.ttl_seconds`,
		w.tenant, wr.Ref.UserID, ns, wr.Ref.Key, id, wr.Put.Value.String(), repo.EncodeIndexPaths(wr.Put),
		version, created, int64(w.now), exp, ttl); err != nil {
		return model.ItemWritten{}, err
	}
	if err := w.vectors(id, texts); err != nil {
		return model.ItemWritten{}, err
	}
	it, err := w.read(id)
	return model.ItemWritten{Item: it, Created: !live}, err
}

// vectors makes the item's texts to embed those of its new value: a text
// that did not change keeps its embedding (or its place in the worker's
// queue); a new or changed one waits for the worker; one the new value no
// longer has goes.
func (w *itemWriter) vectors(id string, texts []model.ItemText) error {
	keep := make(map[string]string, len(texts))
	for _, t := range texts {
		keep[t.Field] = t.Text
	}
	rows, err := w.tx.QueryContext(w.ctx, `SELECT field, text FROM item_vectors WHERE tenant_id = ? AND item_id = ?`, w.tenant, id)
	if err != nil {
		return err
	}
	old, err := collect(rows, func(sc scanner) ([2]string, error) {
		var ft [2]string
		return ft, sc.Scan(&ft[0], &ft[1])
	})
	if err != nil {
		return err
	}
	same := map[string]bool{}
	for _, ft := range old {
		text, ok := keep[ft[0]]
		switch {
		case !ok:
			_, err = w.tx.ExecContext(w.ctx, `DELETE FROM item_vectors WHERE tenant_id = ? AND item_id = ? AND field = ?`, w.tenant, id, ft[0])
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
		if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO item_vectors (tenant_id, item_id, field, text, state, due)
			VALUES (?, ?, ?, ?, 'pending', ?)
			ON CONFLICT (tenant_id, item_id, field) DO UPDATE SET text = excluded.text,
				state = 'pending', model = NULL, embedding = NULL, error = NULL, attempts = 0, due = excluded.due`,
			w.tenant, id, t.Field, t.Text, int64(w.now)); err != nil {
			return err
		}
	}
	return itemEmbeddingState(w.ctx, w.tx, w.tenant, id)
}

// itemEmbeddingState sums up the item's texts in its embedding_state: failed
// if one failed, pending if one waits, ready when all are embedded, null
// when it has none.
func itemEmbeddingState(ctx context.Context, tx *sql.Tx, tenant, id string) error {
	_, err := tx.ExecContext(ctx, `UPDATE items SET
		embedding_state = (SELECT CASE WHEN count(*) = 0 THEN NULL WHEN sum(v.state = 'failed') > 0 THEN 'failed'
			WHEN sum(v.state = 'pending') > 0 THEN 'pending' ELSE 'ready' END
			FROM item_vectors v WHERE v.tenant_id = items.tenant_id AND v.item_id = items.id),
		embedding_error = (SELECT v.error FROM item_vectors v WHERE v.tenant_id = items.tenant_id AND v.item_id = items.id
			AND v.state = 'failed' ORDER BY v.field LIMIT 1)
		WHERE tenant_id = ? AND id = ?`, tenant, id)
	return err
}

func (w *itemWriter) read(id string) (model.Item, error) {
	return scanItem(w.tx.QueryRowContext(w.ctx, `SELECT `+repo.ItemColumns+` FROM items i WHERE i.tenant_id = ? AND i.id = ?`, w.tenant, id))
}

func (w *itemWriter) erase(id string) error {
	if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM item_vectors WHERE tenant_id = ? AND item_id = ?`, w.tenant, id); err != nil {
		return err
	}
	_, err := w.tx.ExecContext(w.ctx, `DELETE FROM items WHERE tenant_id = ? AND id = ?`, w.tenant, id)
	return err
}

func (w *itemWriter) hasEndpoint() (bool, error) {
	if w.endpoint == nil {
		var named bool
		if err := w.tx.QueryRowContext(w.ctx, `SELECT EXISTS (SELECT 1 FROM tenant_embedding WHERE tenant_id = ?)`, w.tenant).Scan(&named); err != nil {
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
