package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// ItemText is one text of an item that is embedded for search by meaning:
// Field names where it came from, as LangGraph names its vectors (the path,
// or path.i when the path picked several texts).
type ItemText struct {
	Field string
	Text  string
}

// CheckItemPath says what is wrong with an index path ("" when nothing).
// Paths are LangGraph's: "$" (the whole value), fields joined by dots
// ("meta.title"), array elements ("tags[0]", "tags[-1]", "tags[*]"), any
// member ("*") and several fields at once ("{title,meta.summary}").
func CheckItemPath(p string) string {
	if p == "" || utf8.RuneCountInString(p) > MaxItemPathChars {
		return "must be 1 to " + strconv.Itoa(MaxItemPathChars) + " characters long"
	}
	depth := 0
	for _, c := range p {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
		if depth < 0 {
			return "has a closing bracket without an opening one"
		}
	}
	if depth != 0 {
		return "has an unclosed bracket"
	}
	return ""
}

// ItemTexts is the texts of value that paths pick, each path's in order, as
// LangGraph's getTextAtPath picks them: a string as it is, a number or
// boolean as its JSON text, an object or array as JSON indented by two
// spaces. Empty texts are left out: there is nothing to embed. More than
// MaxItemTexts texts is an error.
func ItemTexts(value Object, paths []string) ([]ItemText, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	root, err := parseNode(jsontext.Value(value.String()))
	if err != nil {
		return nil, err
	}
	var out []ItemText
	for _, p := range paths {
		texts := root.textsAt(tokenizePath(p))
		for i, t := range texts {
			if t == "" {
				continue
			}
			field := p
			if len(texts) > 1 {
				field = p + "." + strconv.Itoa(i)
			}
			out = append(out, ItemText{Field: field, Text: t})
		}
		if len(out) > MaxItemTexts {
			return nil, fmt.Errorf("picks more than %d texts to embed", MaxItemTexts)
		}
	}
	return out, nil
}

// tokenizePath splits a path as LangGraph's tokenizePath does: at dots
// outside brackets, with [..] and {..} tokens of their own.
func tokenizePath(p string) []string {
	var (
		tokens []string
		cur    strings.Builder
	)
	flush := func() {
		if cur.Len() > 0 {
			tokens = append(tokens, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '[', '{':
			flush()
			open, close := c, byte(']')
			if c == '{' {
				close = '}'
			}
			depth, j := 1, i+1
			for j < len(p) && depth > 0 {
				switch p[j] {
				case open:
					depth++
				case close:
					depth--
				}
				j++
			}
			tokens = append(tokens, p[i:j])
			i = j
			continue
		case '.':
			flush()
		default:
			cur.WriteByte(c)
		}
		i++
	}
	flush()
	return tokens
}

// node is a JSON value with its objects' members in order.
type node struct {
	raw   jsontext.Value
	keys  []string
	vals  []*node
	elems []*node
}

func parseNode(v jsontext.Value) (*node, error) {
	n := &node{raw: v}
	switch v.Kind() {
	case '{', '[':
		dec := jsontext.NewDecoder(bytes.NewReader(v))
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		for dec.PeekKind() != '}' && dec.PeekKind() != ']' {
			var name string
			if v.Kind() == '{' {
				tok, err := dec.ReadToken()
				if err != nil {
					return nil, err
				}
				name = tok.String()
			}
			val, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			child, err := parseNode(val.Clone())
			if err != nil {
				return nil, err
			}
			if v.Kind() == '{' {
				n.keys, n.vals = append(n.keys, name), append(n.vals, child)
			} else {
				n.elems = append(n.elems, child)
			}
		}
	}
	return n, nil
}

func (n *node) member(name string) *node {
	for i, k := range n.keys {
		if k == name {
			return n.vals[i]
		}
	}
	return nil
}

// indented is the value as JSON.stringify(v, null, 2) writes it.
func (n *node) indented() string {
	var b bytes.Buffer
	if err := json.Indent(&b, n.raw, "", "  "); err != nil {
		return string(n.raw)
	}
	return b.String()
}

// leaf is the text of a value a path ends on: none for null.
func (n *node) leaf() []string {
	switch n.raw.Kind() {
	case 'n':
		return nil
	case '"':
		var s string
		_ = json.Unmarshal(n.raw, &s)
		return []string{s}
	case '{', '[':
		return []string{n.indented()}
	}
	return []string{string(n.raw)}
}

func (n *node) textsAt(tokens []string) []string {
	if len(tokens) == 1 && tokens[0] == "$" {
		return []string{n.indented()}
	}
	return n.extract(tokens, 0)
}

func (n *node) extract(tokens []string, pos int) []string {
	if pos >= len(tokens) {
		return n.leaf()
	}
	tok := tokens[pos]
	var out []string
	if pos == 0 && tok == "$" {
		out = append(out, n.indented())
	}
	switch {
	case strings.HasPrefix(tok, "[") && strings.HasSuffix(tok, "]"):
		if n.raw.Kind() != '[' {
			return nil
		}
		ix := tok[1 : len(tok)-1]
		if ix == "*" {
			for _, e := range n.elems {
				out = append(out, e.extract(tokens, pos+1)...)
			}
			return out
		}
		i, err := strconv.Atoi(ix)
		if err != nil {
			return out
		}
		if i < 0 {
			i += len(n.elems)
		}
		if i >= 0 && i < len(n.elems) {
			out = append(out, n.elems[i].extract(tokens, pos+1)...)
		}
	case strings.HasPrefix(tok, "{") && strings.HasSuffix(tok, "}"):
		if n.raw.Kind() != '{' {
			return nil
		}
		for _, f := range strings.Split(tok[1:len(tok)-1], ",") {
			cur := n
			for _, t := range tokenizePath(strings.TrimSpace(f)) {
				if cur = cur.member(t); cur == nil {
					break
				}
			}
			if cur == nil {
				continue
			}
			switch cur.raw.Kind() {
			case '{', '[':
				out = append(out, cur.indented())
			case 'n':
				out = append(out, "null")
			default:
				out = append(out, cur.leaf()...)
			}
		}
	case tok == "*":
		kids := n.elems
		if n.raw.Kind() == '{' {
			kids = n.vals
		}
		for _, k := range kids {
			out = append(out, k.extract(tokens, pos+1)...)
		}
	default:
		if m := n.member(tok); m != nil {
			out = append(out, m.extract(tokens, pos+1)...)
		}
	}
	return out
}
