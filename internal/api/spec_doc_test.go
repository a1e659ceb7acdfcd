package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
)

// TestOpenAPIDocumentIsValid checks that openapi.yaml is a valid OpenAPI document
// and that it documents exactly the routes the router serves, no more, no less.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../../openapi.yaml")
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not valid: %v", err)
	}

	// Every operation of the spec, as "METHOD /path".
	var inSpec []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inSpec = append(inSpec, strings.ToUpper(method)+" "+path)
		}
	}

	// Every route of the router, in the same form: chi writes path parameters as
	// {name}, as OpenAPI does.
	routes := New(Config{}).router
	var inRouter []string
	err = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route == "/" || strings.HasPrefix(route, "/ui/") {
			return nil // the dashboard's files (internal/ui) and the redirect to them, not part of the API
		}
		if route == "/docs/" {
			return nil // leads to /docs (described there): paths in the spec take no trailing slash
		}
		if len(route) > 1 {
			route = strings.TrimSuffix(route, "/")
		}
		inRouter = append(inRouter, strings.ToUpper(method)+" "+route)
		return nil
	})
	if err != nil {
		t.Fatalf("walk the router: %v", err)
	}
	if len(inRouter) == 0 {
		t.Fatal("the router has no routes")
	}

	for _, r := range inRouter {
		if !slices.Contains(inSpec, r) {
			t.Errorf("route %s is served but not documented in openapi.yaml", r)
		}
	}
	for _, op := range inSpec {
		if !slices.Contains(inRouter, op) {
			t.Errorf("operation %s is documented in openapi.yaml but not served", op)
		}
	}
}
