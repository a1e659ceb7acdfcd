package model

import "strconv"

// DefaultIdempotencyTTL is how long an Idempotency-Key is remembered unless
// the server is told otherwise (--idempotency-ttl), in milliseconds: a day,
// as Stripe keeps its keys.
const DefaultIdempotencyTTL = 24 * 60 * 60 * 1000

// MaxIdempotencyKey bounds an Idempotency-Key header.
const MaxIdempotencyKey = 255

// IdempotencyKey names a keyed request: whose it is (the tenant, and the end
// user for a key bound to one, "" otherwise) and the key it was sent with.
// The same key from another tenant or another user is another key.
type IdempotencyKey struct {
	Tenant, User, Key string
}

// IdempotentAnswer is what a keyed request was answered, to answer its
// retries the same.
type IdempotentAnswer struct {
	Status  int
	Headers map[string]string // the few that describe the body: Content-Type, Location, ETag
	Body    []byte
}

// IdempotentRecord is what the store remembers of a keyed request: what it
// was (Fingerprint: a hash of its method, path, query, media type and body;
// Route, its method and route pattern, for the error that names it), when,
// and its answer (nil: applied, the answer not kept).
type IdempotentRecord struct {
	Fingerprint []byte
	Route       string
	CreatedAt   Time
	Answer      *IdempotentAnswer
}

// CheckIdempotencyKey is the rule for an Idempotency-Key header: 1 to 255
// printable ASCII characters (an empty header means none).
func CheckIdempotencyKey(key string) error {
	bad := func(msg string) error {
		return Invalid(FieldError{Field: "Idempotency-Key", Message: msg})
	}
	if len(key) > MaxIdempotencyKey {
		return bad("must be at most " + strconv.Itoa(MaxIdempotencyKey) + " characters long")
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return bad("must be printable ASCII (no control characters, nothing past ~)")
		}
	}
	return nil
}

// IdempotencyInProgress is a keyed request whose key another request is
// using now: its answer is not known yet, so this one does nothing.
func IdempotencyInProgress(key string) *Error {
	return &Error{Kind: KindConflict, Code: "idempotency_in_progress",
		Msg:    "a request with Idempotency-Key " + strconv.Quote(key) + " is still being processed; retry it in a moment to get its answer",
		Fields: []FieldError{{Field: "Idempotency-Key", Message: "is in use by a request in flight"}}}
}

// IdempotencyApplied is a keyed request that was applied before but whose
// answer the server did not keep (it stopped between the write and the
// answer, or the route's answer is never kept): nothing is applied again.
func IdempotencyApplied(key, route string) *Error {
	return &Error{Kind: KindConflict, Code: "idempotency_applied",
		Msg: "the request with Idempotency-Key " + strconv.Quote(key) + " (" + route +
			") was applied, but its answer was not kept; read the resource to see the outcome",
		Fields: []FieldError{{Field: "Idempotency-Key", Message: "names a request already applied"}}}
}

// IdempotencyReused is a key sent again with another request (another body,
// or another route).
func IdempotencyReused(key, route string) *Error {
	return &Error{Kind: KindConflict, Code: "idempotency_conflict",
		Msg: "Idempotency-Key " + strconv.Quote(key) + " was already used with a different request (" + route +
			", another body or another route); use a new key for a new request",
		Fields: []FieldError{{Field: "Idempotency-Key", Message: "already used with a different request"}}}
}
