package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/logbook/logbook/internal/model"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// mapErr turns driver errors into model errors by SQLite result code, never by
// message text (which changes between SQLite versions).
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var me *model.Error
	if errors.As(err, &me) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return &model.Error{Kind: model.KindNotFound, Code: "not_found", Msg: "not found", Err: err}
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return model.Internal(err)
	}
	code := se.Code()
	switch code {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return &model.Error{Kind: model.KindConflict, Code: "conflict", Msg: "an object with this id already exists", Err: err}
	}
	switch code & 0xff { // primary result code
	case sqlite3.SQLITE_FULL:
		e := model.Unavailable(err)
		e.Msg = "storage is full; the request was not applied, retry when space is freed"
		return e
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CORRUPT,
		sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_PROTOCOL:
		return model.Unavailable(err)
	}
	return model.Internal(err)
}

// isConstraint reports whether err is a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code()
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}
