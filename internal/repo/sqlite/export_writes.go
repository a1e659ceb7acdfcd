package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// exportCheckpointWrites writes the session's pending writes in their key's
// order, which is the order an import stores them back in.
func exportCheckpointWrites(ctx context.Context, tx *sql.Tx, e *transfer.Writer, tenant, sessionID string) error {
	rows, err := tx.QueryContext(ctx, `SELECT namespace, checkpoint_id, task_id, idx, channel, task_path, value, created_at
		FROM checkpoint_writes WHERE tenant_id = ? AND session_id = ? ORDER BY namespace, checkpoint_id, task_id, idx`,
		tenant, sessionID)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var w model.ExportCheckpointWrite
		var value string
		if err := rows.Scan(&w.Namespace, &w.CheckpointID, &w.TaskID, &w.Idx, &w.Channel, &w.TaskPath, &value, &w.CreatedAt); err != nil {
			return mapErr(err)
		}
		w.Value = model.JSON(value)
		if err := e.CheckpointWrite(&w); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}

// importCheckpointWrite stores one pending write of an export as it was.
func importCheckpointWrite(ctx context.Context, tx *sql.Tx, tenant, sessionID string, w *model.ExportCheckpointWrite) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO checkpoint_writes (tenant_id, session_id, namespace, checkpoint_id, task_id, idx,
		channel, task_path, value, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, sessionID, w.Namespace, w.CheckpointID, w.TaskID, w.Idx, w.Channel, w.TaskPath, string(w.Value), w.CreatedAt)
	return mapErr(err)
}
