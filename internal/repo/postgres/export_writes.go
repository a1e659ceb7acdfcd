package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// exportCheckpointWritesPG writes the session's pending writes in their
// key's order, as SQLite's export does (byte order: COLLATE "C").
func exportCheckpointWritesPG(ctx context.Context, tx pgx.Tx, e *transfer.Writer, tenant, sessionID string) error {
	rows, err := tx.Query(ctx, `SELECT namespace, checkpoint_id, task_id, idx, channel, task_path, value, created_at
		FROM checkpoint_writes WHERE tenant_id = $1 AND session_id = $2
		ORDER BY namespace COLLATE "C", checkpoint_id COLLATE "C", task_id COLLATE "C", idx`, tenant, sessionID)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var w model.ExportCheckpointWrite
		var value string
		var created int64
		if err := rows.Scan(&w.Namespace, &w.CheckpointID, &w.TaskID, &w.Idx, &w.Channel, &w.TaskPath, &value, &created); err != nil {
			return mapErr(err)
		}
		w.Value, w.CreatedAt = model.JSON(value), model.Time(created)
		if err := e.CheckpointWrite(&w); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}

// checkpointWrite stores one pending write of an export as it was.
func (im *importTxPG) checkpointWrite(ctx context.Context, w *model.ExportCheckpointWrite) error {
	_, err := im.tx.Exec(ctx, `INSERT INTO checkpoint_writes (tenant_id, session_id, namespace, checkpoint_id, task_id, idx,
		channel, task_path, value, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		im.tenant, im.ses.ID, w.Namespace, w.CheckpointID, w.TaskID, w.Idx, w.Channel, w.TaskPath, string(w.Value), int64(w.CreatedAt))
	return mapErr(err)
}
