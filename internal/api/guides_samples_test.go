package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// checkSamples checks a guide's json and "text output" blocks (the
// conventions are in guides_md_test.go): each value against the schema its
// block names, and, where the block follows an sh block, against what that
// block printed. out holds each sh block's output by index; nil, for a file
// that does not run, checks the schemas alone.
func checkSamples(doc *openapi3.T, g guide, out map[int]string) []error {
	var errs []error
	fail := func(b mdBlock, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", g.path, b.line-1, fmt.Sprintf(format, args...)))
	}
	prevRun := -1 // the sh block this one follows, if the block before it is one
	for i, b := range g.blocks {
		shown := strings.Join(b.lines, "\n")
		switch {
		case b.lang() == "json":
			schema, err := sampleSchema(doc, b.info[1:])
			if err != nil {
				fail(b, "%v", err)
				break
			}
			values, err := jsonValues(shown)
			if err != nil {
				fail(b, "the sample is not JSON: %v", err)
				break
			}
			if len(values) == 0 {
				fail(b, "an empty sample")
				break
			}
			for _, v := range values {
				if schema == nil {
					continue
				}
				if err := schema.VisitJSON(v); err != nil {
					fail(b, "the sample does not match openapi.yaml (%s): %v", strings.Join(b.info[1:], " "), err)
				}
			}
			if out == nil && schema == nil {
				fail(b, "a 'json output' block in a file whose blocks do not run")
			}
			if out == nil {
				break
			}
			if prevRun < 0 {
				if schema == nil {
					fail(b, "a 'json output' block must follow the sh block whose output it shows")
				}
				break
			}
			got, err := jsonValues(out[prevRun])
			if err != nil {
				fail(b, "shows the output of the block at line %d, which printed no JSON (%v):\n%s", g.blocks[prevRun].line-1, err, out[prevRun])
				break
			}
			if len(got) < len(values) {
				fail(b, "shows %d values, but the block at line %d printed %d:\n%s", len(values), g.blocks[prevRun].line-1, len(got), out[prevRun])
				break
			}
			for k, v := range values {
				real := got[len(got)-len(values)+k]
				if err := sameAsPrinted("", v, real); err != nil {
					fail(b, "value %d is not what the block at line %d printed: %v\nprinted: %s", k+1, g.blocks[prevRun].line-1, err, compact(real))
				}
			}
		case b.lang() == "text" && slices.Contains(b.info, "output"):
			if out == nil {
				fail(b, "a 'text output' block in a file whose blocks do not run")
				break
			}
			if prevRun < 0 {
				fail(b, "a 'text output' block must follow the sh block whose output it shows")
				break
			}
			printed := strings.Split(strings.TrimRight(out[prevRun], "\n"), "\n")
			if len(printed) < len(b.lines) {
				fail(b, "shows %d lines, but the block at line %d printed %d:\n%s", len(b.lines), g.blocks[prevRun].line-1, len(printed), out[prevRun])
				break
			}
			printed = printed[len(printed)-len(b.lines):]
			for k, line := range b.lines {
				if err := sameLine(line, printed[k]); err != nil {
					fail(b, "line %d is not what the block at line %d printed: %v\nprinted: %s", k+1, g.blocks[prevRun].line-1, err, printed[k])
				}
			}
		}
		prevRun = -1
		if b.runs() {
			prevRun = i
		}
	}
	return errs
}

// sampleSchema is the schema a json block's marks name; nil for "output".
func sampleSchema(doc *openapi3.T, marks []string) (*openapi3.Schema, error) {
	switch {
	case len(marks) == 1 && marks[0] == "output":
		return nil, nil
	case len(marks) == 1:
		ref := doc.Components.Schemas[marks[0]]
		if ref == nil || ref.Value == nil {
			return nil, fmt.Errorf("no schema %q in openapi.yaml", marks[0])
		}
		return ref.Value, nil
	case len(marks) == 2:
		op := operation(doc, marks[0])
		if op == nil {
			return nil, fmt.Errorf("no operation %q in openapi.yaml", marks[0])
		}
		if marks[1] == "request" {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				return nil, fmt.Errorf("%s takes no body", marks[0])
			}
			return jsonSchema(op.RequestBody.Value.Content, marks[0]+" request")
		}
		status, err := strconv.Atoi(marks[1])
		if err != nil {
			return nil, fmt.Errorf("%q is neither a status nor request", marks[1])
		}
		res := op.Responses.Status(status)
		if res == nil || res.Value == nil {
			return nil, fmt.Errorf("%s has no %d response in openapi.yaml", marks[0], status)
		}
		return jsonSchema(res.Value.Content, fmt.Sprintf("%s %d", marks[0], status))
	}
	return nil, errors.New("a json block names what it shows: OPERATION STATUS, OPERATION request, SCHEMA or output (guides_md_test.go)")
}

func operation(doc *openapi3.T, id string) *openapi3.Operation {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == id {
				return op
			}
		}
	}
	return nil
}

func jsonSchema(content openapi3.Content, what string) (*openapi3.Schema, error) {
	for _, ct := range []string{"application/json", "application/problem+json"} {
		if mt := content.Get(ct); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
			return mt.Schema.Value, nil
		}
	}
	return nil, fmt.Errorf("%s has no JSON body in openapi.yaml", what)
}

// jsonValues reads one JSON value after another (a pretty-printed object, a
// run of curl answers, NDJSON lines).
func jsonValues(s string) ([]any, error) {
	var values []any
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return values, nil
		}
		if err != nil {
			return values, err
		}
		values = append(values, v)
	}
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Values that differ from run to run: generated ids (msg_01…), times, and
// the ids a user-bound key's sessions get when theirs is taken. A sample
// shows one such value; the run prints another.
var (
	generatedID = regexp.MustCompile(`^([a-z]{1,8}_)[0-9A-Za-z_-]{8,}$`)
	userSpaceID = regexp.MustCompile(`^(.+!)[0-9a-f]{16}$`)
	eventID     = regexp.MustCompile(`^[0-9A-Za-z_-]{16,}$`)
)

func varying(shown, printed string) bool {
	if _, err := time.Parse(time.RFC3339Nano, shown); err == nil {
		_, err := time.Parse(time.RFC3339Nano, printed)
		return err == nil
	}
	for _, re := range []*regexp.Regexp{generatedID, userSpaceID} {
		if m, p := re.FindStringSubmatch(shown), re.FindStringSubmatch(printed); m != nil && p != nil {
			return m[1] == p[1]
		}
	}
	return false
}

// varyingNumbers are the fields whose numbers depend on timing.
var varyingNumbers = []string{"index_lag"}

// sameAsPrinted says where a sample differs from what was printed: every key of
// one is in the other, and every value is the same but for varying ones.
func sameAsPrinted(path string, shown, printed any) error {
	switch s := shown.(type) {
	case map[string]any:
		p, ok := printed.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: the sample has an object, the run printed %s", pathName(path), compact(printed))
		}
		for k := range p {
			if _, ok := s[k]; !ok {
				return fmt.Errorf("%s: the sample lacks %q, which the run printed (%s)", pathName(path), k, compact(p[k]))
			}
		}
		for _, k := range sortedKeys(s) {
			if _, ok := p[k]; !ok {
				return fmt.Errorf("%s: the sample has %q, which the run did not print", pathName(path), k)
			}
			if err := sameAsPrinted(path+"."+k, s[k], p[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		p, ok := printed.([]any)
		if !ok || len(p) != len(s) {
			return fmt.Errorf("%s: the sample has %d items, the run printed %s", pathName(path), len(s), compact(printed))
		}
		for i := range s {
			if err := sameAsPrinted(fmt.Sprintf("%s[%d]", path, i), s[i], p[i]); err != nil {
				return err
			}
		}
		return nil
	case string:
		if p, ok := printed.(string); ok && (p == s || varying(s, p)) {
			return nil
		}
	case float64:
		if _, ok := printed.(float64); ok && slices.Contains(varyingNumbers, path[strings.LastIndex(path, ".")+1:]) {
			return nil
		}
		if p, ok := printed.(float64); ok && p == s {
			return nil
		}
	default:
		if shown == printed {
			return nil
		}
	}
	return fmt.Errorf("%s: the sample shows %s, the run printed %s", pathName(path), compact(shown), compact(printed))
}

func pathName(path string) string {
	if path == "" {
		return "the value"
	}
	return strings.TrimPrefix(path, ".")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sameLine compares a line of a text sample with the printed one: an event
// stream's ids vary, and its data lines are JSON, compared as above.
func sameLine(shown, printed string) error {
	if shown == printed {
		return nil
	}
	if strings.HasPrefix(shown, "id: ") && eventID.MatchString(shown[4:]) && strings.HasPrefix(printed, "id: ") && eventID.MatchString(printed[4:]) {
		return nil // an event's id is opaque, and differs from run to run
	}
	if s, ok := strings.CutPrefix(shown, "data: "); ok {
		if p, ok := strings.CutPrefix(printed, "data: "); ok {
			sv, err := jsonValues(s)
			if err != nil || len(sv) != 1 {
				return fmt.Errorf("the sample's data is not one JSON value: %v", err)
			}
			pv, err := jsonValues(p)
			if err != nil || len(pv) != 1 {
				return fmt.Errorf("the printed data is not one JSON value: %v", err)
			}
			return sameAsPrinted("", sv[0], pv[0])
		}
	}
	return fmt.Errorf("the sample shows %q", shown)
}
