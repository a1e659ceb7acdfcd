package model

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxJSONDepth is how deeply a free-form JSON value a client sends (metadata, a
// checkpoint's state, a tool's input) may nest, counted from the value itself.
// SQLite's JSON functions stop at 1000 levels and encoding/json at 10000; one
// limit well below both, checked when a value is decoded, means that whatever is
// accepted can also be stored, queried, exported and imported again.
const MaxJSONDepth = 64

// maxDocumentDepth leaves room for the fixed levels around a free-form value (a
// batch: body, messages, message, metadata) on top of MaxJSONDepth.
const maxDocumentDepth = MaxJSONDepth + 16

// strict is how every request body and import line is decoded: field names match
// exactly (not case-insensitively, as encoding/json does), unknown fields, a name
// given twice and invalid UTF-8 are refused rather than dropped, merged or
// replaced.
var strict = json.JoinOptions(json.RejectUnknownMembers(true))

// DecodeJSON decodes one JSON object into v under the strict rules. Its errors
// are *Error: malformed_json (KindBadRequest) for text that is not JSON, and
// validation_failed (KindInvalid) naming the field for JSON that does not fit v.
func DecodeJSON(data []byte, v any) error {
	if t := trimSpace(data); len(t) == 0 || t[0] != '{' {
		// encoding a null or a list into a struct would silently do nothing
		return Errorf(KindBadRequest, "malformed_json", "the body must be a JSON object")
	}
	// Free-form values check their own depth as they are decoded (Object, JSON);
	// this pass stops a document too deep for any of them before the decoder
	// spends its own, much higher, limit on it.
	if jsonDepth(data, maxDocumentDepth) > maxDocumentDepth {
		return tooDeep(data, reflect.TypeOf(v))
	}
	if err := json.Unmarshal(data, v, strict); err != nil {
		return jsonError(err)
	}
	return nil
}

// jsonError turns the decoder's errors into ours, naming the field by the path a
// client wrote ("messages[3].role").
func jsonError(err error) *Error {
	var (
		me  *Error
		sem *json.SemanticError
		syn *jsontext.SyntacticError
	)
	switch {
	case errors.As(err, &sem):
		field := FieldPath(string(sem.JSONPointer))
		want := ""
		if sem.GoType != nil {
			want = goKindName(sem.GoType.Kind().String())
		}
		switch {
		case errors.As(sem.Err, &me):
			return prefixed(me, field)
		case errors.Is(sem.Err, json.ErrUnknownName):
			return Invalid(FieldError{Field: field, Message: "is not a known field"})
		case sem.Err == nil && want != "":
			return Invalid(FieldError{Field: field, Message: fmt.Sprintf("must be %s, not %s", want, kindName(sem.JSONKind))})
		case want == "an integer" && strings.Contains(sem.Err.Error(), "out of range"):
			return Invalid(FieldError{Field: field, Message: "is out of range for a 64-bit integer"})
		case want == "an integer":
			return Invalid(FieldError{Field: field, Message: "must be an integer, not " + kindName(sem.JSONKind)})
		}
		msg := "is invalid"
		if sem.Err != nil {
			msg += ": " + sem.Err.Error()
		}
		return Invalid(FieldError{Field: field, Message: msg})
	case errors.As(err, &syn):
		field := FieldPath(string(syn.JSONPointer))
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return Invalid(FieldError{Field: field, Message: "is given more than once"})
		case syn.Err != nil && (strings.Contains(syn.Err.Error(), "UTF-8") || strings.Contains(syn.Err.Error(), "surrogate")):
			// the decoder's only report of these is its wording
			return Invalid(FieldError{Field: field, Message: "must be valid UTF-8 text"})
		case syn.Err != nil && strings.Contains(syn.Err.Error(), "exceeded max depth"):
			return Invalid(FieldError{Field: field, Message: fmt.Sprintf("nests more than %d levels deep", MaxJSONDepth)})
		}
		return Errorf(KindBadRequest, "malformed_json", "malformed JSON at byte %d: %v", syn.ByteOffset, syn.Err)
	case errors.As(err, &me):
		return me
	}
	return Errorf(KindBadRequest, "malformed_json", "malformed JSON: %v", err)
}

// tooDeep names the field of a document that nests past maxDocumentDepth: the
// path to the deepest point, cut where it enters a free-form value (or leaves
// the fields of v's type), which is the field the client must fix.
func tooDeep(data []byte, t reflect.Type) *Error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	for dec.StackDepth() <= maxDocumentDepth {
		if _, err := dec.ReadToken(); err != nil {
			return Errorf(KindBadRequest, "malformed_json", "malformed JSON: %v", err)
		}
	}
	var path []string
	for tok := range dec.StackPointer().Tokens() {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == objectType || t == rawType || t.Kind() == reflect.Interface {
			break
		}
		if strings.HasPrefix(t.Name(), "Optional[") {
			f, _ := t.FieldByName("Value")
			t = f.Type
			continue
		}
		next, ok := memberType(t, tok)
		if !ok {
			break
		}
		path = append(path, tok)
		t = next
	}
	field := FieldPath("/" + strings.Join(path, "/"))
	return Invalid(FieldError{Field: field, Message: fmt.Sprintf("nests more than %d levels deep", MaxJSONDepth)})
}

var (
	objectType = reflect.TypeFor[Object]()
	rawType    = reflect.TypeFor[JSON]()
)

// memberType is the type that JSON member (or array index) tok of a t decodes into.
func memberType(t reflect.Type, tok string) (reflect.Type, bool) {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return t.Elem(), true
	case reflect.Map:
		return t.Elem(), true
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				if ft, ok := memberType(f.Type, tok); ok {
					return ft, true
				}
				continue
			}
			if name == tok {
				return f.Type, true
			}
		}
	}
	return nil, false
}

// prefixed puts a field path in front of the fields an error names.
func prefixed(e *Error, path string) *Error {
	if path == "" {
		return e
	}
	out := *e
	if len(e.Fields) == 0 {
		out.Fields = []FieldError{{Field: path, Message: e.Msg}}
		out.Msg = path + ": " + e.Msg
		return &out
	}
	out.Fields = make([]FieldError, len(e.Fields))
	for i, f := range e.Fields {
		name := path
		if f.Field != "" {
			name += "." + f.Field
		}
		out.Fields[i] = FieldError{Field: name, Message: f.Message}
	}
	if len(out.Fields) == 1 {
		out.Msg = out.Fields[0].Field + ": " + out.Fields[0].Message
	}
	return &out
}

// FieldPath renders a JSON pointer ("/messages/3/role") as the path a client
// reads in an error ("messages[3].role").
func FieldPath(pointer string) string {
	if pointer == "" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// kindName names a JSON kind the way a client thinks of it.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 'n':
		return "null"
	}
	return "another type"
}

// goKindName names a Go kind the way a JSON client thinks of it.
func goKindName(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "another type"
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// jsonDepth reports how deeply raw (one valid JSON value) nests: 0 for a scalar,
// 1 for {} or []. It stops counting past limit, so a hostile value costs one pass.
func jsonDepth(raw []byte, limit int) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case '}', ']':
			depth--
		}
	}
	return deepest
}
