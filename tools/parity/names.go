package main

import (
	"strings"
	"unicode"
)

// A method's name in each client is its operationId in that language's
// case (createSession, create_session, CreateSession), except for the
// operations below, whose methods have the same other name in all three.
// Each says why.
var renamed = map[string]struct {
	Methods []string // in TypeScript's case
	Why     string
}{
	"closeSession":              {[]string{"closeSession", "purgeSession"}, "`?purge=true` erases instead of closing: its own method, since it answers nothing and cannot be undone"},
	"appendMessage":             {[]string{"appendMessage", "appendMany", "openStream"}, "its NDJSON form (many messages on one request) is a writer, and `appendMany` the writer fed a list"},
	"appendMessageBatch":        {[]string{"appendMessages"}, "it appends messages, all or nothing; the batch is the request's shape"},
	"createPassage":             {[]string{"insertPassage"}, "Letta's name for writing to archival memory, which the memory tools use too"},
	"searchPassages":            {[]string{"searchArchival"}, "one search of archival memory; it posts the query when it carries a vector (`searchPassagesByBody`)"},
	"searchPassagesByBody":      {[]string{"searchArchival"}, "as `searchPassages`"},
	"getSessionContext":         {[]string{"getContext"}, "shorter, and a session's is the only context there is"},
	"resumeSession":             {[]string{"resume"}, "the verb of the hand-over, as the guides say it"},
	"repairSession":             {[]string{"repair"}, "as `resume`, whose report it applies"},
	"rewindSession":             {[]string{"rewind"}, "as `resume`"},
	"streamSessionEvents":       {[]string{"events"}, "a follower of the live feed, not one request: it reconnects where it left off"},
	"streamEvents":              {[]string{"tenantEvents"}, "as `events`, for the whole tenant"},
	"getLatestCheckpoint":       {[]string{"findCheckpoint"}, "it finds the latest of a namespace or the one a client id names"},
	"putCheckpointRetention":    {[]string{"setCheckpointRetention"}, "one method sets a session's policy, or (none) returns it to the server's default"},
	"deleteCheckpointRetention": {[]string{"setCheckpointRetention"}, "as `putCheckpointRetention`"},
}

// leftOut are the operations no client has a method for, each with why.
var leftOut = map[string]string{
	"getDocs":       "a page for browsers (the API reference)",
	"getDocsScript": "the reference page's script",
	"getOpenAPI":    "the contract itself: the clients are made from the repository's copy (each client's raw request reads it)",
}

// methodNames are the names of op's methods, in TypeScript's case.
func methodNames(op string) []string {
	if r, ok := renamed[op]; ok {
		return r.Methods
	}
	return []string{op}
}

// words splits a camelCase name into its words, a run of capitals being one
// (createAPIKey: create, API, Key).
func words(name string) []string {
	rs := []rune(name)
	var out []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerBefore := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
		upperRunEnds := unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if unicode.IsUpper(rs[i]) && (lowerBefore || upperRunEnds) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// pythonName is create_session for createSession, create_api_key for createAPIKey.
func pythonName(name string) string {
	w := words(name)
	for i := range w {
		w[i] = strings.ToLower(w[i])
	}
	return strings.Join(w, "_")
}

// goName is CreateSession for createSession, GetMessageByClientID for
// getMessageByClientId (Go spells initialisms in one case).
func goName(name string) string {
	w := words(name)
	for i := range w {
		switch strings.ToLower(w[i]) {
		case "id", "api", "url", "ttl":
			w[i] = strings.ToUpper(w[i])
		default:
			w[i] = strings.ToUpper(w[i][:1]) + w[i][1:]
		}
	}
	return strings.Join(w, "")
}

// norm makes the spellings of one name in the three languages equal:
// session_id, sessionId and sessionID are all sessionid.
func norm(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}
