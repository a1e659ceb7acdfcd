package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// What one request body may hold, route by route: every request that carries
// one legal object (a message, a checkpoint state, a block's value …) must fit
// at the server's defaults, however its JSON is written.
//
// The model bounds each object by what it holds (a message's JSON as Logbook
// writes it, a state's canonical JSON, a block's characters); a client's
// encoder may spend more bytes on the same object than Logbook does, by
// escaping: "\u0041" for an "A" (six bytes for one), a surrogate pair
// "\ud83d\ude00" for one character. So a route's limit is its object's bound
// times the most that escaping can make of it, plus an envelope for what
// travels around the object. A body past its route's limit is 413 (at once,
// from Content-Length, when that says so); a body within it whose object is
// past the object's bound is 422 naming the field.
//
// Limits this large do not mean the server holds that much per request: what
// a tenant's bodies hold beyond --max-body-bytes is counted against a budget
// (bodymemory.go), so a flood of large bodies is refused, not buffered.
const (
	// escapedByte is the most bytes JSON may spend on one byte of text
	// (\u0041 for "A"): for objects bounded in bytes.
	escapedByte = 6
	// escapedChar is the most it may spend on one character (a surrogate
	// pair, \ud83d\ude00): for objects bounded in characters.
	escapedChar = 12
	// envelope is room for what a request carries besides its object (ids,
	// keys, fences, numbers, whitespace): far more than any of them takes.
	envelope = 64 << 10
	// embeddingJSON is an embedding's JSON: MaxEmbeddingDims numbers, each
	// at most as long as an encoder writes a float64
	// ("-1.2345678901234567e-308,", 25 bytes), rounded up.
	embeddingJSON = model.MaxEmbeddingDims * 32
	// metadataJSON is a metadata object, bounded as compact JSON with its
	// escapes kept, except that HTML-safe ones (\u003c) count as one byte.
	metadataJSON = escapedByte * model.MaxObjectBytes
)

// The objects of the routes in bodyLimits.
const (
	// messageBody is one message (model.MaxRecordJSON as Logbook writes it,
	// its own escapes included) with its embedding; a batch, a rewind's tail
	// and an NDJSON stream's line hold at most as much. What a request's
	// data: URLs hold comes on top (inlineBody): they leave the message for
	// files before its record is measured.
	messageBody = escapedByte*model.MaxRecordJSON + embeddingJSON + envelope
	// stateBody is a checkpoint's state (model.MaxStateBytes of canonical
	// JSON), whole (PUT) or as a merge patch (PATCH).
	stateBody = escapedByte*model.MaxStateBytes + envelope
	// textBody is one long text (a block's value, a passage, a memory tool's
	// content: model.MaxBlockLimit characters) with a passage's embedding,
	// tags and metadata.
	textBody = escapedChar*model.MaxBlockLimit + embeddingJSON + metadataJSON + envelope
	// twoTextsBody is a replacement: the text to find and the text to put.
	twoTextsBody = 2*escapedChar*model.MaxBlockLimit + envelope
	// agentBody is an agent: its system prompt, tool ids (256 of 256
	// characters), tags (64 of 128), metadata and embedding endpoint.
	agentBody = escapedChar*(model.MaxSystemChars+256*256+64*128) + metadataJSON + envelope
)

// inlineBody is what one request's data: URLs may add to a message route's
// body: base64 of --max-file-bytes (model/inline.go, api/inline.go: one
// request's inline data hold at most that, decoded), escaped as any text may
// be. At the default 20 MiB that is 168 MiB, so a message route admits about
// 216 MiB; DefaultBodyMemoryBytes gives one tenant room for one such body.
func inlineBody(maxFile int64) int64 {
	return escapedByte*(4*((maxFile+2)/3)) + envelope
}

// inlineRoutes are the routes whose messages may carry data: URLs.
var inlineRoutes = []routeKey{
	{"POST", "/v1/sessions/{id}/messages"},
	{"POST", "/v1/sessions/{id}/messages/batch"},
	{"POST", "/v1/sessions/{id}/rewind"},
	{"POST", "/v1/sessions/{id}/compactions"},
}

// routeKey names a route as chi matched it.
type routeKey struct{ method, pattern string }

// bodyLimits lists the routes whose object can take more than an ordinary
// body. Every other JSON route (sessions, forks, keys, searches, a message's
// embedding …) carries objects that fit in --max-body-bytes at its default,
// however escaped, and takes that. Imports, NDJSON streams as a whole and
// file uploads have limits of their own (--import-max-bytes,
// --max-file-bytes).
var bodyLimits = map[routeKey]int64{
	{"POST", "/v1/sessions/{id}/messages"}:             messageBody,
	{"POST", "/v1/sessions/{id}/messages/batch"}:       messageBody,
	{"POST", "/v1/sessions/{id}/rewind"}:               messageBody,
	{"POST", "/v1/sessions/{id}/compactions"}:          messageBody,
	{"PUT", "/v1/sessions/{id}/checkpoint"}:            stateBody,
	{"PATCH", "/v1/sessions/{id}/checkpoint"}:          stateBody,
	{"PUT", "/v1/agents/{id}/blocks/{label}"}:          textBody,
	{"POST", "/v1/agents/{id}/blocks/{label}/append"}:  textBody,
	{"POST", "/v1/agents/{id}/blocks/{label}/replace"}: twoTextsBody,
	{"POST", "/v1/agents/{id}/archival"}:               textBody,
	{"POST", "/v1/agents/{id}/tools/{tool_name}"}:      twoTextsBody,
	{"POST", "/v1/agents"}:                             agentBody,
	{"PATCH", "/v1/agents/{id}"}:                       agentBody,
}

// newBodyLimits is bodyLimits with --max-body-bytes as a floor: the flag
// raises every route's limit, and is the limit of the routes not listed; it
// cannot lower a route below what its legal objects need. The routes that
// take data: URLs grow with --max-file-bytes.
func newBodyLimits(maxBody, maxFile int64) map[routeKey]int64 {
	out := make(map[routeKey]int64, len(bodyLimits))
	for k, n := range bodyLimits {
		out[k] = max(n, maxBody)
	}
	for _, k := range inlineRoutes {
		out[k] = max(bodyLimits[k]+inlineBody(maxFile), maxBody)
	}
	return out
}

// bodyLimit is the limit of the route r was routed to.
func (s *Server) bodyLimit(r *http.Request) int64 {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return s.maxBody
	}
	if n, ok := s.limits[routeKey{r.Method, rc.RoutePattern()}]; ok {
		return n
	}
	return s.maxBody
}

// messageLineLimit is the longest line of an NDJSON append stream: one
// message, as the single append takes it.
func (s *Server) messageLineLimit() int64 {
	return s.limits[routeKey{"POST", "/v1/sessions/{id}/messages"}]
}
