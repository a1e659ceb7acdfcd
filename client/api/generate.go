package api

// The code in api.gen.go is generated from the repository's openapi.yaml by
// oapi-codegen, with the settings in oapi-codegen.yaml. The generator is a
// tool of the repository's module (its go.mod), not of this one, so that
// the client's users never download it: the directive runs it from the
// repository root. `make generate` (or `go generate ./...` in client/)
// regenerates it, and `make check-generated` fails when the committed file
// is not what the generator makes now.
//go:generate go tool -C ../.. oapi-codegen -config client/api/oapi-codegen.yaml openapi.yaml
