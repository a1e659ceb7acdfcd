package model

// ID prefixes say what an id names, so that a misplaced id is obvious in a log.
const (
	PrefixSession    = "ses_"
	PrefixMessage    = "msg_"
	PrefixAgent      = "agt_"
	PrefixBlock      = "blk_"
	PrefixPassage    = "psg_"
	PrefixCheckpoint = "ckp_"
	PrefixFile       = "file_"
	PrefixItem       = "itm_"
	PrefixJob        = "job_"
)

// ValidClientID reports whether s may be used as a client-chosen id:
// 1–128 characters of [A-Za-z0-9_.:-], but not "." or "..": in a URL path those
// are dot-segments, which clients and proxies that normalise URLs resolve away
// (/v1/sessions/../messages), so the id would name another route.
func ValidClientID(s string) bool {
	if len(s) == 0 || len(s) > 128 || s == "." || s == ".." {
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
