// Package logbook holds what the module root owns: the OpenAPI contract, embedded
// so that the binary serves the very file that tests validate against.
package logbook

import _ "embed"

// OpenAPI is openapi.yaml, the API contract.
//
//go:embed openapi.yaml
var OpenAPI []byte
