// Package model holds Logbook's domain types, the session status machine and the
// error kinds that every layer speaks. It does no I/O and imports nothing of ours.
package model

import (
	"errors"
	"fmt"
)

// Kind says which class of failure an Error is. The api package maps each Kind to
// exactly one HTTP status, so append new kinds; never reorder.
type Kind uint8

const (
	KindInternal     Kind = iota // a bug or an unexpected failure: logged, never shown
	KindInvalid                  // a field failed validation (422)
	KindBadRequest               // the request itself is unreadable: JSON, query, cursor (400)
	KindNotFound                 // no such object for this tenant (404)
	KindConflict                 // the object's state forbids the change (409)
	KindPrecondition             // If-Match did not match (412)
	KindTooLarge                 // the body exceeds the configured limit (413)
	KindUnsupported              // the body is not JSON (415)
	KindUnavailable              // storage failed; the write did not happen (503)
	KindNotAllowed               // the route exists but not with this method (405)
	KindUnauthorized             // no valid API key (401)
	KindForbidden                // the key's scope does not reach the route (403)
	KindRateLimited              // the tenant sent too many requests (429)
)

// Error is the one error type that crosses layer boundaries. Msg and Fields are
// safe to show a client; Err is the cause and is only ever logged.
type Error struct {
	Kind   Kind
	Code   string         // stable snake_case, e.g. "invalid_transition"
	Msg    string         // human-readable, safe for clients
	Fields []FieldError   // which input fields were wrong, in input order
	Extra  map[string]any // structured details a client can act on (from, to, …)
	Err    error          // the underlying cause; never sent to clients
}

// FieldError names one bad input field by its JSON path.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Msg, e.Err)
	}
	return e.Code + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is(err, model.ErrNotFound) match any Error of the same code, so
// callers can test for a kind of failure without comparing messages.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Kind == e.Kind
}

// Sentinels for errors.Is. Build the errors you return with Errorf or the helpers
// below so that they carry a useful message.
var (
	ErrNotFound            = &Error{Kind: KindNotFound, Code: "not_found"}
	ErrConflict            = &Error{Kind: KindConflict, Code: "conflict"}
	ErrInvalidTransition   = &Error{Kind: KindConflict, Code: "invalid_transition"}
	ErrSessionClosed       = &Error{Kind: KindConflict, Code: "session_closed"}
	ErrIdempotencyConflict = &Error{Kind: KindConflict, Code: "idempotency_conflict"}
	ErrValidation          = &Error{Kind: KindInvalid, Code: "validation_failed"}
	ErrInvalidCursor       = &Error{Kind: KindBadRequest, Code: "invalid_cursor"}
	ErrInvalidQuery        = &Error{Kind: KindBadRequest, Code: "invalid_query"}
	ErrUnavailable         = &Error{Kind: KindUnavailable, Code: "storage_unavailable"}
)

// Errorf builds an Error of the given kind and code with a formatted message.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// NotFound reports that no object of this type and id exists for the tenant.
func NotFound(what, id string) *Error {
	return &Error{Kind: KindNotFound, Code: "not_found", Msg: fmt.Sprintf("%s %q not found", what, id),
		Extra: map[string]any{"resource": what}}
}

// IsNotFound reports whether err says that an object of this type is missing, so
// that a caller can tell a missing block (which it may create) from a missing agent.
func IsNotFound(err error, what string) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindNotFound && e.Extra["resource"] == what
}

// Invalid reports field validation failures; fields must not be empty.
func Invalid(fields ...FieldError) *Error {
	msg := "request validation failed"
	if len(fields) == 1 {
		msg = fields[0].Field + ": " + fields[0].Message
	}
	return &Error{Kind: KindInvalid, Code: "validation_failed", Msg: msg, Fields: fields}
}

// InvalidQuery reports a bad query-string parameter, naming it.
func InvalidQuery(param, message string) *Error {
	return &Error{Kind: KindBadRequest, Code: "invalid_query", Msg: param + ": " + message,
		Fields: []FieldError{{Field: param, Message: message}}}
}

// Unavailable wraps a storage failure: the operation did not take effect.
func Unavailable(cause error) *Error {
	return &Error{Kind: KindUnavailable, Code: "storage_unavailable",
		Msg: "storage is unavailable; the request was not applied, retry later", Err: cause}
}

// Internal wraps an unexpected failure.
func Internal(cause error) *Error {
	return &Error{Kind: KindInternal, Code: "internal", Msg: "internal error", Err: cause}
}

// AsError returns err as an *Error, wrapping anything unknown as internal.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}
