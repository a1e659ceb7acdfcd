package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
)

// An operation of openapi.yaml, with what a client method must let its
// caller say: the path's parameters in order, the query's, and the JSON
// body's top-level properties.
type operation struct {
	ID     string
	Method string
	Path   string
	// PathParams are the path's parameters in the order they appear.
	PathParams []string
	Query      []string
	// Body is the request body's schema name ("" when it has none or it is
	// not JSON), BodyProps its top-level properties (none for a oneOf).
	Body      string
	BodyProps []string
	// BodyMedia is the body's media type when it is not JSON (NDJSON, any
	// bytes).
	BodyMedia string
}

// contract is what the parity check reads from openapi.yaml.
type contract struct {
	Ops []operation
	// Schemas are the top-level properties of each schema of components.
	Schemas map[string][]string
}

// loadContract reads every operation of the contract, in the order of its
// paths, and the properties of its schemas.
func loadContract(data []byte) (*contract, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	paths, err := pathOrder(data)
	if err != nil {
		return nil, err
	}
	var ops []operation
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			o := item.GetOperation(method)
			if o == nil {
				continue
			}
			op := operation{ID: o.OperationID, Method: method, Path: path}
			params := append(slices.Clone(item.Parameters), o.Parameters...)
			for _, seg := range strings.Split(path, "/") {
				if strings.HasPrefix(seg, "{") {
					op.PathParams = append(op.PathParams, strings.Trim(seg, "{}"))
				}
			}
			for _, p := range params {
				if p.Value.In == openapi3.ParameterInQuery {
					op.Query = append(op.Query, p.Value.Name)
				}
			}
			if o.RequestBody != nil {
				for media, mt := range o.RequestBody.Value.Content {
					if media == "application/json" {
						op.Body = refName(mt.Schema.Ref)
						if len(mt.Schema.Value.OneOf) == 0 && len(mt.Schema.Value.AnyOf) == 0 {
							op.BodyProps = sortedKeys(mt.Schema.Value.Properties)
						}
					}
				}
				if op.Body == "" {
					for media := range o.RequestBody.Value.Content {
						op.BodyMedia = media
					}
				}
			}
			if op.ID == "" {
				return nil, fmt.Errorf("%s %s has no operationId", method, path)
			}
			ops = append(ops, op)
		}
	}
	schemas := map[string][]string{}
	for name, ref := range doc.Components.Schemas {
		schemas[name] = sortedKeys(ref.Value.Properties)
	}
	return &contract{Ops: ops, Schemas: schemas}, nil
}

// pathOrder lists the contract's paths in the order the file has them, which
// groups them by resource (the parsed document keeps them in a map).
func pathOrder(data []byte) ([]string, error) {
	var doc struct {
		Paths yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read openapi.yaml's paths: %w", err)
	}
	var paths []string
	for i := 0; i+1 < len(doc.Paths.Content); i += 2 {
		paths = append(paths, doc.Paths.Content[i].Value)
	}
	return paths, nil
}

func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
