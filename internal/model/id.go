package model

// ID prefixes say what an id names, so that a misplaced id is obvious in a log.
const (
	PrefixSession    = "ses_"
	PrefixMessage    = "msg_"
	PrefixAgent      = "agt_"
	PrefixBlock      = "blk_"
	PrefixPassage    = "psg_"
	PrefixCheckpoint = "ckp_"
)

// ValidClientID reports whether s may be used as a client-chosen id:
// 1–128 characters of [A-Za-z0-9_.:-].
func ValidClientID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
