package sqlite

import (
	"context"
	"database/sql"
	"io"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// ExportItems writes the items f picks as an items export, from one read
// snapshot, in (user, namespace, key) order (see repo.Items).
func (s *Store) ExportItems(ctx context.Context, tenant string, f model.ItemExportFilter, w io.Writer) error {
	if err := s.faults.Check(repo.PointItemRead); err != nil {
		return err
	}
	where, args := itemWhere(tenant, f.UserID, f.AllUsers, f.Prefix, nil, model.Now())
	rows, err := s.rdb.QueryContext(ctx, `SELECT i.id, `+repo.ItemColumns+`, coalesce(v.field, ''), coalesce(v.text, ''),
		coalesce(v.model, ''), v.embedding FROM items i
		LEFT JOIN item_vectors v ON v.tenant_id = i.tenant_id AND v.item_id = i.id AND v.state = 'ready'
		WHERE `+where+` ORDER BY i.user_id, i.namespace, i.key, v.field`, args...)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	e, err := transfer.NewItemsWriter(w)
	if err != nil {
		return err
	}
	next := func() (repo.ItemExportRow, bool, error) {
		if !rows.Next() {
			return repo.ItemExportRow{}, false, mapErr(rows.Err())
		}
		var (
			r   repo.ItemExportRow
			row repo.ItemRow
			raw []byte
		)
		dest := append(append([]any{&r.ItemID}, row.Dest()...), &r.Vector.Field, &r.Vector.Text, &r.Vector.Model, &raw)
		if err := rows.Scan(dest...); err != nil {
			return r, false, mapErr(err)
		}
		r.Vector.Embedding = repo.DecodeVector(raw)
		var err error
		r.Item, err = row.Item()
		return r, true, err
	}
	if err := repo.GroupExportRows(next, e.Item); err != nil {
		return err
	}
	return e.End()
}

// ImportItems restores an items export in one writer transaction (see
// repo.Items).
func (s *Store) ImportItems(ctx context.Context, tenant string, r io.Reader, opts model.ItemImportOptions) (model.ItemsImportResult, error) {
	sp, err := transfer.ParseItems(r)
	if err != nil {
		return model.ItemsImportResult{}, err
	}
	defer sp.Close()
	var out model.ItemsImportResult
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out = model.ItemsImportResult{}
		lines, err := sp.Lines()
		if err != nil {
			return model.Internal(err)
		}
		w := itemWriter{ctx: ctx, tx: tx, tenant: tenant, now: model.Now()}
		for {
			line, it, err := lines.NextItem()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.faults.Check(repo.PointItemWrite); err != nil {
				return err
			}
			if err := w.restore(line, it, opts); err != nil {
				return err
			}
			out.Items++
		}
	})
	return out, err
}

// restore stores an exported item as it was (version and times), over the
// item of the same space, namespace and key only with opts.Replace.
func (w *itemWriter) restore(line int, it model.ExportItem, opts model.ItemImportOptions) error {
	user := ""
	if it.UserID != nil {
		user = *it.UserID
	}
	ns := model.JoinNamespace(it.Namespace)
	var (
		id      string
		expires sql.NullInt64
	)
	err := w.tx.QueryRowContext(w.ctx, `SELECT id, expires_at FROM items WHERE tenant_id = ? AND user_id = ? AND namespace = ? AND key = ?`,
		w.tenant, user, ns, it.Key).Scan(&id, &expires)
	switch {
	case err == sql.ErrNoRows:
	case err != nil:
		return err
	case opts.Replace || (expires.Valid && expires.Int64 <= int64(w.now)):
		if err := w.erase(id); err != nil {
			return err
		}
	default:
		return transfer.Conflict(line, "item %q in namespace %q exists; import with replace=true to overwrite it", it.Key, ns)
	}
	ep := opts.ServerEmbeds
	if !ep && len(it.Index) > 0 {
		if ep, err = w.hasEndpoint(); err != nil {
			return err
		}
	}
	ready, pending, err := repo.RestoredTexts(it, ep)
	if err != nil {
		return model.Internal(err) // checked when the export was parsed
	}
	id = newID(model.PrefixItem)
	put := model.PutItem{Value: it.Value}
	if it.Index != nil {
		put.Index = &model.ItemIndex{Paths: it.Index}
	}
	if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO items (tenant_id, user_id, namespace, key, id, value, index_paths,
		version, created_at, updated_at, expires_at, ttl_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.tenant, user, ns, it.Key, id, it.Value.String(), repo.EncodeIndexPaths(put), it.Version,
		int64(it.CreatedAt), int64(it.UpdatedAt), it.ExpiresAt, it.TTLSeconds); err != nil {
		return err
	}
	for _, v := range ready {
		if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO item_vectors (tenant_id, item_id, field, text, state, model, embedding)
			VALUES (?, ?, ?, ?, 'ready', ?, ?)`, w.tenant, id, v.Field, v.Text, v.Model, repo.EncodeVector(v.Embedding)); err != nil {
			return err
		}
	}
	for _, t := range pending {
		if _, err := w.tx.ExecContext(w.ctx, `INSERT INTO item_vectors (tenant_id, item_id, field, text, state, due)
			VALUES (?, ?, ?, ?, 'pending', ?)`, w.tenant, id, t.Field, t.Text, int64(w.now)); err != nil {
			return err
		}
	}
	return itemEmbeddingState(w.ctx, w.tx, w.tenant, id)
}
