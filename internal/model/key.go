package model

// Scope is what an API key may do. Each scope includes the ones below it:
// admin ⊃ write ⊃ read.
type Scope string

const (
	ScopeRead  Scope = "read"  // GET routes: dashboards
	ScopeWrite Scope = "write" // and every data write: agent runtimes
	ScopeAdmin Scope = "admin" // and the tenant's keys
)

var scopeRank = map[Scope]int{ScopeRead: 1, ScopeWrite: 2, ScopeAdmin: 3}

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool { return scopeRank[s] > 0 }

// Allows reports whether a key of scope s may use a route that needs scope need.
func (s Scope) Allows(need Scope) bool { return s.Valid() && scopeRank[s] >= scopeRank[need] }

// Principal is who a request acts as: a tenant, with a scope.
type Principal struct {
	Tenant string
	Scope  Scope
	KeyID  string // empty in open mode
	UserID string // the end user a bound key acts for; empty: any user
}

// Identity is what GET /v1/whoami tells a caller of itself: whom its key
// acts as, so that a client (the dashboard) offers only what the key may do.
type Identity struct {
	Tenant string  `json:"tenant"`
	Scope  Scope   `json:"scope"`
	UserID *string `json:"user_id"`
	KeyID  *string `json:"key_id"`
	// OpenMode says the request carried no key and the server let it act as
	// the default tenant with every scope.
	OpenMode bool `json:"open_mode"`
}

// IdentityOf is p as GET /v1/whoami shows it.
func IdentityOf(p Principal) Identity {
	id := Identity{Tenant: p.Tenant, Scope: p.Scope, OpenMode: p.KeyID == ""}
	if p.UserID != "" {
		id.UserID = &p.UserID
	}
	if p.KeyID != "" {
		id.KeyID = &p.KeyID
	}
	return id
}

// DefaultTenant is the tenant of open mode (no API key exists, loopback only).
const DefaultTenant = "default"

// APIKey describes a key; the key text itself is never stored or shown again.
type APIKey struct {
	ID        string `json:"id"`
	Tenant    string `json:"tenant"`
	Name      string `json:"name"`
	Scope     Scope  `json:"scope"`
	CreatedAt Time   `json:"created_at"`
	RevokedAt *Time  `json:"revoked_at"`
	// UserID binds the key to one end user: it sees only sessions with this
	// user_id, and the sessions it creates get it. Nil: the key sees every session.
	UserID *string `json:"user_id"`
}

// NewAPIKey is a key just made: the only time its text (Key) is shown.
type NewAPIKey struct {
	APIKey
	Key string `json:"key"`
}

// CreateAPIKey is the input of POST /v1/admin/keys; the tenant is the caller's.
type CreateAPIKey struct {
	Scope Scope  `json:"scope" validate:"required,oneof=read write admin"`
	Name  string `json:"name,omitempty" validate:"max=200"`
	// UserID binds the key to one end user (see APIKey.UserID); not with admin scope.
	UserID *string `json:"user_id,omitempty" validate:"omitempty,min=1,max=128,excluded_if=Scope admin"`
}

// ErrUnauthorized is a missing, malformed, unknown or revoked key. One error for
// all four, so that an answer never tells which keys exist.
var ErrUnauthorized = &Error{Kind: KindUnauthorized, Code: "unauthorized",
	Msg: "a valid API key is required: send Authorization: Bearer lb_…"}

// ForbiddenForUser is a key bound to one end user on a route that spans users,
// or naming another user.
func ForbiddenForUser(user string) *Error {
	return &Error{Kind: KindForbidden, Code: "forbidden",
		Msg: "this key is bound to user " + user + "; it acts only on that user's sessions"}
}

// Forbidden is a valid key whose scope does not reach the route.
func Forbidden(have, need Scope) *Error {
	return &Error{Kind: KindForbidden, Code: "forbidden",
		Msg: "this key's scope is " + string(have) + "; this route needs " + string(need)}
}
