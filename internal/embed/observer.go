package embed

import "time"

// Observer is told what the client and the worker do, for metrics. Its
// methods are called on the worker's goroutines and must not block.
type Observer interface {
	// EmbeddingCall is one call to an endpoint: host is the URL's host
	// (and port), never its path or query, which a tenant chooses; reason
	// is ReasonOK or one of the failures'.
	EmbeddingCall(host, reason string, took time.Duration)
	// EmbeddingTexts counts texts by what became of them: OutcomeReady,
	// OutcomeRetry, OutcomeFailed or OutcomeDeferred.
	EmbeddingTexts(outcome string, n int)
}

// What became of a text the worker claimed.
const (
	OutcomeReady    = "ready"    // embedded and stored
	OutcomeRetry    = "retry"    // its call failed; due again after a backoff
	OutcomeFailed   = "failed"   // given up: permanent, or out of attempts
	OutcomeDeferred = "deferred" // not tried: its endpoint was busy; due again soon, no attempt counted
)
