package transfer

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// ItemsWriter writes the lines of an items export (model.ItemsExportLine),
// hashing every byte, so that both backends write the same bytes for the
// same items.
type ItemsWriter struct {
	w     io.Writer
	h     hash.Hash
	count int64
}

// NewItemsWriter starts an items export on w with its header line.
func NewItemsWriter(w io.Writer) (*ItemsWriter, error) {
	e := &ItemsWriter{w: w, h: sha256.New()}
	return e, e.line(model.ItemsExportLine{Type: model.LineItemsHeader, Format: model.ItemsExportFormat, Version: model.ItemsExportVersion})
}

func (e *ItemsWriter) line(l model.ItemsExportLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return model.Internal(err)
	}
	b = append(b, '\n')
	e.h.Write(b)
	if _, err := e.w.Write(b); err != nil {
		return fmt.Errorf("export: write: %w", err)
	}
	return nil
}

// Item writes one item line.
func (e *ItemsWriter) Item(it *model.ExportItem) error {
	e.count++
	return e.line(model.ItemsExportLine{Type: model.LineItem, Item: it})
}

// End writes the items_end line: the count and the SHA-256 of every byte before it.
func (e *ItemsWriter) End() error {
	b, _ := json.Marshal(model.ItemsExportLine{Type: model.LineItemsEnd, Counts: &model.ItemsExportCounts{Items: e.count},
		SHA256: hex.EncodeToString(e.h.Sum(nil))})
	if _, err := e.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("export: write: %w", err)
	}
	return nil
}

// ParseItems reads an items export once, a line at a time, checking each
// line with the rules a put follows, and keeps it in a Spool returned only
// when the whole stream checks out, checksum and count included.
// Errors: malformed_json, invalid_import naming the line.
func ParseItems(r io.Reader) (*Spool, error) {
	sp := &Spool{}
	p := itemsParser{sp: sp, h: sha256.New(), seen: map[string]int{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		raw, whole, err := readLine(br, buf[:0], MaxLine, p.h)
		buf = raw
		if len(raw) > 0 {
			p.line++
			p.take(raw, whole)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			sp.Close()
			return nil, &model.Error{Kind: model.KindBadRequest, Code: "malformed_json", Msg: "could not read the import stream", Err: err}
		}
	}
	if err := p.finish(); err != nil {
		sp.Close()
		return nil, err
	}
	return sp, nil
}

type itemsParser struct {
	sp     *Spool
	h      hash.Hash
	line   int
	header bool
	count  int64
	seen   map[string]int // space, namespace and key → the line that holds it
	err    error
	end    *model.ItemsExportLine
	sum    string
}

func (p *itemsParser) take(raw []byte, whole bool) {
	if !whole {
		if p.err == nil {
			p.err = model.InvalidImport(p.line, fmt.Sprintf("the line is longer than %d bytes: no export line can be", MaxLine))
		}
		return
	}
	if p.end != nil {
		if len(trimSpace(raw)) > 0 && p.err == nil {
			p.err = model.InvalidImport(p.line, "data after the end line")
		}
		return
	}
	var l model.ItemsExportLine
	derr := decodeLine(p.line, raw, &l)
	if derr == nil && l.Type == model.LineItemsEnd {
		p.end, p.sum = &l, hex.EncodeToString(p.h.Sum(nil))
		if p.err == nil && (l.Counts == nil || l.SHA256 == "" || l.Item != nil) {
			p.err = model.InvalidImport(p.line, `an items_end line holds "counts" and "sha256" and nothing else`)
		}
		return
	}
	p.h.Write(raw)
	if p.err != nil {
		return
	}
	if derr != nil {
		if raw[len(raw)-1] != '\n' {
			derr = model.InvalidImport(p.line, "the stream ends in the middle of a line: it is truncated")
		}
		p.err = derr
		return
	}
	if p.err = p.add(l); p.err == nil && l.Type == model.LineItem {
		p.err = p.sp.write(raw)
	}
}

func (p *itemsParser) add(l model.ItemsExportLine) error {
	switch {
	case !p.header && (l.Type != model.LineItemsHeader || l.Format != model.ItemsExportFormat || l.Version != model.ItemsExportVersion):
		return model.InvalidImport(p.line, fmt.Sprintf(`the first line is the header {"type":"header","format":%q,"version":%d}`,
			model.ItemsExportFormat, model.ItemsExportVersion))
	case l.Type == model.LineItemsHeader:
		if p.header {
			return model.InvalidImport(p.line, "a second header line")
		}
		p.header = true
		return nil
	case l.Type != model.LineItem || l.Item == nil:
		return model.InvalidImport(p.line, `a line between the header and the end is {"type":"item","item":{…}}`)
	}
	it := l.Item
	if err := CheckExportItem(it); err != nil {
		return lineError(p.line, "item", model.AsError(err))
	}
	user := ""
	if it.UserID != nil {
		user = *it.UserID
	}
	k := user + "\x00" + model.JoinNamespace(it.Namespace) + "\x00" + it.Key
	if first, ok := p.seen[k]; ok {
		return model.InvalidImport(p.line, "the item is also on line "+strconv.Itoa(first))
	}
	p.seen[k] = p.line
	p.count++
	return nil
}

// CheckExportItem checks an exported item with the rules a put follows.
func CheckExportItem(it *model.ExportItem) error {
	if err := (model.ItemRef{Namespace: it.Namespace, Key: it.Key}).Check("namespace", "key"); err != nil {
		return err
	}
	if it.UserID != nil && (*it.UserID == "" || utf8.RuneCountInString(*it.UserID) > 128 || strings.IndexFunc(*it.UserID, unicode.IsControl) >= 0) {
		return model.Invalid(model.FieldError{Field: "user_id", Message: "must be null or 1 to 128 characters, none of them control characters"})
	}
	put := model.PutItem{Value: it.Value, TTLSeconds: it.TTLSeconds}
	if it.Index != nil {
		put.Index = &model.ItemIndex{Paths: it.Index}
	}
	if err := put.Validate(); err != nil {
		return err
	}
	switch {
	case it.Version < 1:
		return model.Invalid(model.FieldError{Field: "version", Message: "must be at least 1"})
	case it.UpdatedAt < it.CreatedAt:
		return model.Invalid(model.FieldError{Field: "updated_at", Message: "must not be before created_at"})
	}
	for i, v := range it.Vectors {
		f := "vectors[" + strconv.Itoa(i) + "]."
		switch {
		case v.Field == "" || v.Model == "" || len(v.Model) > 256:
			return model.Invalid(model.FieldError{Field: f + "model", Message: "field and model (1 to 256 characters) are required"})
		case len(v.Embedding) == 0 || len(v.Embedding) > 8192:
			return model.Invalid(model.FieldError{Field: f + "embedding", Message: "must have 1 to 8192 numbers"})
		}
		if err := repo.CheckQueryEmbedding(v.Embedding, 0); err != nil {
			return model.Invalid(model.FieldError{Field: f + "embedding", Message: "must hold finite numbers"})
		}
	}
	return nil
}

func (p *itemsParser) finish() error {
	if p.err != nil {
		return p.err
	}
	switch {
	case !p.header:
		return model.InvalidImport(max(p.line, 1), "the export is empty")
	case p.end == nil:
		return model.InvalidImport(p.line, "no items_end line: the export is truncated")
	case p.end.SHA256 != p.sum:
		return model.InvalidImport(p.line, "sha256 does not match the lines before the end line: the export was changed or damaged")
	case p.end.Counts.Items != p.count:
		return model.InvalidImport(p.line, fmt.Sprintf("counts.items is %d but the export holds %d", p.end.Counts.Items, p.count))
	}
	return nil
}

// NextItem returns the next spooled item line and its number (the header is
// not spooled: the first item is line 2), or io.EOF after the last.
func (r *SpoolLines) NextItem() (line int, it model.ExportItem, err error) {
	raw, err := r.br.ReadBytes('\n')
	if err == io.EOF && len(raw) == 0 {
		return 0, it, io.EOF
	}
	if err != nil && err != io.EOF {
		return 0, it, model.Internal(err)
	}
	r.line++
	var l model.ItemsExportLine
	if err := model.DecodeJSON(raw, &l); err != nil || l.Item == nil {
		return 0, it, model.Internal(fmt.Errorf("spooled line %d no longer decodes: %v", r.line, err))
	}
	return r.line + 1, *l.Item, nil
}
