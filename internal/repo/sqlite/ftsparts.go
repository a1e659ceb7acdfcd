package sqlite

import (
	"context"
	"database/sql"
	"unicode/utf8"
)

// A message's text is indexed in parts of at most indexPartBytes, cut at a space
// where there is one, so that no word is split and the cost of indexing one part
// is small and known (FTS5 takes ~30 µs a KiB here). Part 0 of a message is the
// FTS5 row whose rowid is the message's gid, as before parts existed; part k ≥ 1
// is the row -(gid·256 + k). Negative rowids keep the two ranges apart without
// renumbering the rows that were indexed before.
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
func partRowID(gid int64, k int) int64 {
	if k == 0 {
		return gid
	}
	return -(gid*256 + int64(k))
}

// gidOfRowIDSQL is the gid of the message that FTS5 row f belongs to.
const gidOfRowIDSQL = `(CASE WHEN f.rowid > 0 THEN f.rowid ELSE (-f.rowid) >> 8 END)`

// indexPartsFrom inserts parts from..len(parts)-1 of one message through
// insert (indexerStatements.insert, in the step's transaction).
func indexPartsFrom(ctx context.Context, insert *sql.Stmt, tenant, session string, seq, gid int64, parts []string, from int) error {
	for k := from; k < len(parts); k++ {
		if _, err := insert.ExecContext(ctx, partRowID(gid, k), parts[k], tenant, session, seq); err != nil {
			return err
		}
	}
	return nil
}
