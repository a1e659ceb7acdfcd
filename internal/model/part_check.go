package model

import (
	"encoding/json"
	"mime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// partFields says which optional fields each type of part may carry; text is
// required for text and refusal parts. A field outside its type's set is refused
// rather than kept and ignored: a client that put a URL on a text part meant
// something the store would not do.
var partFields = map[string]map[string]bool{
	PartText:      {"text": true, "annotations": true},
	PartImage:     {"file_id": true, "url": true, "media_type": true, "detail": true},
	PartFile:      {"file_id": true, "url": true, "media_type": true, "filename": true},
	PartReasoning: {"text": true, "summary": true, "encrypted_content": true, "signature": true},
	PartRefusal:   {"text": true},
	PartData:      {"name": true, "value": true},
	PartJSON:      {"value": true},
}

const partTypes = "text, image, file, reasoning, refusal, data, json"

// partErrors appends what is wrong with parts given as field (a message's
// "content"), each named by its index ("content[2].file_id").
func partErrors(field string, role Role, parts []Part, out []FieldError) []FieldError {
	if len(parts) > MaxParts {
		return append(out, FieldError{Field: field, Message: "must have at most " + strconv.Itoa(MaxParts) + " parts"})
	}
	size := 0
	for i := range parts {
		out = parts[i].fieldErrors(field+"["+strconv.Itoa(i)+"].", role, out)
		size += parts[i].size()
	}
	if size > MaxContentBytes {
		out = append(out, FieldError{Field: field, Message: "the parts hold " + strconv.Itoa(size) +
			" bytes; a message's parts may hold at most " + strconv.Itoa(MaxContentBytes)})
	}
	return out
}

// MaxContentBytes bounds what one message's parts hold together (their text,
// URLs, payloads, annotations and provider data), so that a message, and the
// export line that carries it, stays within what an import reads whole.
const MaxContentBytes = 4 << 20

func (p *Part) size() int {
	n := len(p.FileID) + len(p.URL) + len(p.MediaType) + len(p.Filename) + len(p.Detail) +
		len(p.EncryptedContent) + len(p.Signature) + len(p.Annotations) + len(p.ProviderData) + len(p.Name) + len(p.Value)
	if p.Text != nil {
		n += len(*p.Text)
	}
	for _, s := range p.Summary {
		n += len(s)
	}
	return n
}

func (p *Part) fieldErrors(prefix string, role Role, out []FieldError) []FieldError {
	bad := func(field, msg string) { out = append(out, FieldError{Field: prefix + field, Message: msg}) }
	allowed, known := partFields[p.Type]
	switch {
	case p.Type == "":
		bad("type", "is required")
		return out
	case !known:
		bad("type", "must be one of: "+partTypes)
		return out
	case (p.Type == PartReasoning || p.Type == PartRefusal) && role != RoleAssistant:
		bad("type", p.Type+" parts are only allowed when role is assistant")
		return out
	case p.Type == PartJSON && role != RoleTool:
		bad("type", "json parts are only allowed when role is tool (a tool's result as a JSON value)")
		return out
	}
	for _, f := range p.present() {
		if !allowed[f] {
			bad(f, "is not a field of a "+p.Type+" part")
		}
	}
	long := func(field, s string) {
		if utf8.RuneCountInString(s) > MaxPartChars {
			bad(field, "must be at most "+strconv.Itoa(MaxPartChars)+" characters long")
		}
	}
	if p.Text != nil {
		long("text", *p.Text)
	}
	long("encrypted_content", p.EncryptedContent)
	if len(p.URL) > MaxPartChars && utf8.RuneCountInString(p.URL) > MaxPartChars {
		msg := "must be at most " + strconv.Itoa(MaxPartChars) + " characters long"
		if strings.HasPrefix(p.URL, "data:") {
			msg += ", or, for a data: URL to be stored as a file, hold standard base64 (RFC 4648 section 4, " +
				"no line breaks) of at most --max-file-bytes"
		}
		bad("url", msg)
	}
	switch p.Type {
	case PartText, PartRefusal:
		if p.Text == nil {
			bad("text", "is required")
		}
		if len(p.Annotations) > 0 && p.Annotations[0] != '[' {
			bad("annotations", "must be an array")
		}
	case PartImage, PartFile:
		switch {
		case p.FileID == "" && p.URL == "" && !providerFile(p.ProviderData):
			bad("file_id", "is required unless url is given (or provider_data.file_id, a file in the provider's own store)")
		case p.FileID != "" && p.URL != "" && !(p.lifted && IsCutDataURL(p.URL)):
			bad("url", "cannot be given with file_id")
		case p.FileID != "" && !ValidFileID(p.FileID):
			bad("file_id", "must be a file id (file_…) from POST /v1/files")
		case p.URL != "" && !validPartURL(p.URL):
			bad("url", "must be an http, https or data: URL")
		}

		if p.MediaType != "" && !validMediaType(p.MediaType) {
			bad("media_type", "must be a media type such as image/png")
		}
		if utf8.RuneCountInString(p.Filename) > 1024 {
			bad("filename", "must be at most 1024 characters long")
		}
		if utf8.RuneCountInString(p.Detail) > 32 {
			bad("detail", "must be at most 32 characters long")
		}
	case PartData:
		switch n := utf8.RuneCountInString(p.Name); {
		case n == 0:
			bad("name", "is required")
		case n > 256:
			bad("name", "must be at most 256 characters long")
		}
		if len(p.Value) == 0 {
			bad("value", "is required (any JSON value, null included)")
		}
	case PartJSON:
		if len(p.Value) == 0 {
			bad("value", "is required (any JSON value, null included)")
		}
	case PartReasoning:
		if p.Text == nil && p.Summary == nil && p.EncryptedContent == "" {
			bad("text", "is required unless summary or encrypted_content is given")
		}
		for j, s := range p.Summary {
			if utf8.RuneCountInString(s) > MaxPartChars {
				bad("summary["+strconv.Itoa(j)+"]", "must be at most "+strconv.Itoa(MaxPartChars)+" characters long")
			}
		}
		if len(p.Signature) > MaxPartChars {
			bad("signature", "must be at most "+strconv.Itoa(MaxPartChars)+" characters long")
		}
	}
	return out
}

// present names the optional fields the part carries.
func (p *Part) present() []string {
	var f []string
	add := func(name string, set bool) {
		if set {
			f = append(f, name)
		}
	}
	add("text", p.Text != nil)
	add("annotations", len(p.Annotations) > 0)
	add("file_id", p.FileID != "")
	add("url", p.URL != "")
	add("media_type", p.MediaType != "")
	add("filename", p.Filename != "")
	add("detail", p.Detail != "")
	add("summary", p.Summary != nil)
	add("encrypted_content", p.EncryptedContent != "")
	add("signature", p.Signature != "")
	add("name", p.Name != "")
	add("value", len(p.Value) > 0)
	return f
}

func validPartURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "data:")
}

func validMediaType(t string) bool {
	if len(t) > 255 {
		return false
	}
	mt, _, err := mime.ParseMediaType(t)
	return err == nil && strings.Count(mt, "/") == 1
}

// FileIDs lists the files a message's parts reference, each once.
func FileIDs(parts []Part) []string {
	var ids []string
	for i := range parts {
		if id := parts[i].FileID; id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// providerFile reports provider data that names a file in the provider's own
// store (OpenAI's file-…, Anthropic's file_011…): a part may point there
// alone, for a runtime that has the provider's id and not the bytes.
func providerFile(pd Object) bool {
	if len(pd) == 0 {
		return false
	}
	var v struct {
		FileID any `json:"file_id"`
	}
	if json.Unmarshal(pd, &v) != nil {
		return false
	}
	id, ok := v.FileID.(string)
	return ok && id != ""
}
