package api

// The code in api.gen.go is generated from the repository's openapi.yaml by
// oapi-codegen (a tool in go.mod), with the settings in oapi-codegen.yaml:
// `go generate ./client/...` regenerates it, and `make check-generated` fails
// when the committed file is not what the generator makes now.
//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../openapi.yaml
