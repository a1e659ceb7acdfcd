package ckstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/logbook/logbook/internal/model"
)

// WritesTx is what recording pending writes needs of a backend, inside one
// transaction.
type WritesTx interface {
	// Session as Tx.Session has it.
	Session(ctx context.Context, create bool) (lastSeq int64, policy *model.CheckpointRetention, err error)
	// PutWrite stores w under its key (namespace, checkpoint, task, idx):
	// over what is there when replace is set, else only where nothing is.
	PutWrite(ctx context.Context, ns, checkpointID string, w model.PendingWrite, replace bool) error
}

// PutWrites records one task's writes against a checkpoint, which need not
// exist yet: a runtime may store a task's outputs before the checkpoint they
// belong to. Each write is kept at its position in the list, or, on a
// special channel, at that channel's own index (model.WriteIndex); the first
// write at a position wins, and a special channel's latest write replaces
// the one before (model.WriteReplaces), as LangGraph's savers keep them.
// Errors: KindNotFound.
func PutWrites(ctx context.Context, tx WritesTx, in model.PutCheckpointWrites) error {
	if _, _, err := tx.Session(ctx, in.CreateSession); err != nil {
		return err
	}
	for i, w := range in.Writes {
		idx := model.WriteIndex(w.Channel, i)
		pw := model.PendingWrite{TaskID: in.TaskID, Idx: idx, Channel: w.Channel, Value: w.Value, TaskPath: in.TaskPath}
		if err := tx.PutWrite(ctx, in.Namespace, in.CheckpointID, pw, model.WriteReplaces(idx)); err != nil {
			return err
		}
	}
	return nil
}

// SortWrites puts a checkpoint's writes in the order a runtime applies them:
// by task path, task id and index, strings by code point (their UTF-8
// bytes), as LangGraph's writesSortKey has it.
func SortWrites(ws []model.PendingWrite) {
	slices.SortFunc(ws, func(a, b model.PendingWrite) int {
		return cmp.Or(cmp.Compare(a.TaskPath, b.TaskPath), cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(a.Idx, b.Idx))
	})
}
