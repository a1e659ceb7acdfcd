package repo

import "github.com/logbook/logbook/internal/model"

// SessionHolder reads who holds a stored session id, expired or not (its row
// is there until a purge): found, and the session's user (nil: none).
type SessionHolder func(id string) (user *string, found bool, err error)

// PlaceSession picks the id a new session of user (nil: none) is stored
// under: the rule of model.UserSessionID, the same on every backend.
//
// A user's id space maps the id X it chose to UserSessionID(X, user) when
// that is the user's, else to X when that is the user's. A new session of a
// user must not take an id its space already maps (conflict, naming X), so
// that every id resolves to one session. With own (a key bound to user
// creates the session), X held by another principal, or by no one's session,
// is no conflict: the session is stored as UserSessionID(X, user), and the
// answer is the one a free X gets. Otherwise (a key bound to no user: it sees
// every session) id is stored as it is, and the backend's insert reports an
// id taken.
func PlaceSession(id string, user *string, own bool, holder SessionHolder) (string, error) {
	if user == nil {
		return id, nil
	}
	shown := model.ShownSessionID(id, *user)
	moved := model.UserSessionID(shown, *user)
	var plainHeld bool
	for _, candidate := range []string{moved, shown} {
		u, found, err := holder(candidate)
		if err != nil {
			return "", err
		}
		if found && u != nil && *u == *user {
			return "", SessionTaken(shown)
		}
		plainHeld = plainHeld || (found && candidate == shown)
	}
	switch {
	case !own:
		return id, nil
	case plainHeld:
		return moved, nil
	}
	return shown, nil
}

// SessionTaken is the conflict of a new session whose id is taken.
func SessionTaken(id string) *model.Error {
	return model.Errorf(model.KindConflict, "conflict", "a session with id %q already exists", id)
}
