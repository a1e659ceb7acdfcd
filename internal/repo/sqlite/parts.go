package sqlite

import (
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
)

// insertFileRefs records an imported message's references to files, which must
// exist by then (the export's file lines come before its messages).
func (s *Store) insertFileRefs(ctx context.Context, tx *sql.Tx, tenant, sessionID string, seq int64, parts []model.Part, line int) error {
	for j := range parts {
		id := parts[j].FileID
		if id == "" {
			continue
		}
		var one int
		err := tx.StmtContext(ctx, s.st.fileExists).QueryRowContext(ctx, tenant, id).Scan(&one)
		if err == sql.ErrNoRows {
			return model.InvalidImport(line, "message.content["+itoa(int64(j))+"].file_id: names a file that is neither in this tenant nor in the export")
		}
		if err != nil {
			return err
		}
		if _, err := tx.StmtContext(ctx, s.st.insertMessageFile).ExecContext(ctx, tenant, sessionID, seq, id); err != nil {
			return err
		}
	}
	return nil
}
