package sqlite

import (
	"context"
	"database/sql"
	"unicode/utf8"
)

// A message's text is indexed in parts of at most indexPartBytes, cut at a space
// where there is one, so that no word is split and the cost of indexing one part
// is small and known (FTS5 takes ~30 µs a KiB here). Part k of the message
// numbered gid is the FTS5 row gid<<8 | k: rowid order is gid order, so a
// search that reads the index newest first (ORDER BY rowid DESC) meets a
// message's parts together and stops wherever it has read enough.
const (
	indexPartBytes = 8 << 10
	maxIndexParts  = 255 // 2 MiB of text at least; content is capped well below
)

// indexParts cuts text into the parts that are indexed. It must stay a pure
// function of text: an indexing step that stopped after part k resumes with the
// parts an identical call gives.
func indexParts(text string) []string {
	if len(text) <= indexPartBytes {
		return []string{text}
	}
	var parts []string
	for len(text) > 0 && len(parts) < maxIndexParts-1 {
		if len(text) <= indexPartBytes {
			parts = append(parts, text)
			return parts
		}
		cut := indexPartBytes
		for cut > indexPartBytes/2 && text[cut] != ' ' && text[cut] != '\n' {
			cut--
		}
		if cut == indexPartBytes/2 { // one long word: cut at a rune boundary
			cut = indexPartBytes
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	if len(text) > 0 {
		parts = append(parts, text) // the last part takes whatever is left
	}
	return parts
}

// maxPartsOf bounds how many parts a text of n bytes is cut into: every part but
// the last holds at least indexPartBytes/2.
func maxPartsOf(n int64) int {
	return int(min(n/(indexPartBytes/2)+1, maxIndexParts))
}

// partRowID is the FTS5 rowid of part k of the message numbered gid.
func partRowID(gid int64, k int) int64 { return gid<<8 | int64(k) }

// gidOfRowIDSQL is the gid of the message that FTS5 row f belongs to.
const gidOfRowIDSQL = `(f.rowid >> 8)`

// insertPartSQL inserts one part; its scope column holds the message's scope
// tokens (ftsscope.go).
const insertPartSQL = `INSERT INTO messages_fts (rowid, content, scope, tenant_id, session_id, seq) VALUES (?, ?, ?, ?, ?, ?)`

// indexPartsFrom inserts parts from..len(parts)-1 of one message with ins, a
// statement of insertPartSQL.
func indexPartsFrom(ctx context.Context, ins *sql.Stmt, tenant, session string, seq, gid int64, parts []string, from int) error {
	scope := scopeOf(tenant, session)
	for k := from; k < len(parts); k++ {
		if _, err := ins.ExecContext(ctx, partRowID(gid, k), parts[k], scope, tenant, session, seq); err != nil {
			return err
		}
	}
	return nil
}
