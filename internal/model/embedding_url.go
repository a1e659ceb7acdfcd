package model

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// An embedding endpoint's URL is compared with --embedding-allowed-urls, and
// called, in one canonical form, so that what was allowed is exactly what is
// sent: a path that only looks as if it were under an allowed prefix
// (/v1/../admin, /v1/%2e%2e/admin, /v1//x, /v1%2Fx, /v1\x) is refused rather
// than cleaned, since the server at the other end may read it either way.

// endpointURL is a URL in canonical form: scheme and host lower-cased, the
// scheme's default port left out, percent-encoded unreserved characters
// decoded and the other escapes upper-cased.
type endpointURL struct {
	scheme, host, path, query string
}

func (u endpointURL) String() string {
	s := u.scheme + "://" + u.host + u.path
	if u.query != "" {
		s += "?" + u.query
	}
	return s
}

// CanonicalEmbeddingURL is raw in the form the allowlist compares and the
// client calls. Its error says, for a client, why raw has no such form.
func CanonicalEmbeddingURL(raw string) (string, error) {
	u, err := parseEndpointURL(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// EmbeddingURLHost is the host (and port, if not the default) of a URL that
// CanonicalEmbeddingURL accepts: what names the endpoint in metrics, where
// the path and query (which a tenant chooses) must not appear.
func EmbeddingURLHost(raw string) string {
	u, err := parseEndpointURL(raw)
	if err != nil {
		return "invalid"
	}
	return u.host
}

// CheckEmbeddingPrefix checks one of --embedding-allowed-urls: a URL with a
// scheme, a host and optionally a path, in a form that has a canonical one.
func CheckEmbeddingPrefix(raw string) error {
	u, err := parseEndpointURL(raw)
	if err == nil && u.query != "" {
		err = errors.New("must have no query")
	}
	return err
}

// EmbeddingURLAllowed reports whether raw, once canonical, is one of allowed
// or below one: the same scheme and host (port included) and a path that is
// the prefix's or continues it after a '/' (/v1 allows /v1/embeddings, not
// /v1x). A prefix without a canonical form allows nothing.
func EmbeddingURLAllowed(raw string, allowed []string) bool {
	u, err := parseEndpointURL(raw)
	if err != nil {
		return false
	}
	for _, a := range allowed {
		p, err := parseEndpointURL(a)
		if err != nil || p.query != "" || p.scheme != u.scheme || p.host != u.host {
			continue
		}
		base := strings.TrimSuffix(p.path, "/")
		if base == "" || u.path == base || strings.HasPrefix(u.path, base+"/") {
			return true
		}
	}
	return false
}

func parseEndpointURL(raw string) (endpointURL, error) {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c <= ' ' || c == 0x7f:
			return endpointURL{}, errors.New("must not contain spaces or control characters")
		case c >= 0x80:
			return endpointURL{}, errors.New("must be ASCII (percent-encode the rest)")
		case c == '\\':
			return endpointURL{}, errors.New("must not contain a backslash")
		case c == '#':
			return endpointURL{}, errors.New("must have no fragment")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return endpointURL{}, errors.New("is not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Opaque != "" || u.Host == "" {
		return endpointURL{}, errors.New("must be an http or https URL with a host")
	}
	if u.User != nil {
		return endpointURL{}, errors.New("must not carry credentials")
	}
	host, err := canonicalHost(scheme, u.Hostname(), u.Port())
	if err != nil {
		return endpointURL{}, err
	}
	path, err := canonicalPath(u.EscapedPath())
	if err != nil {
		return endpointURL{}, err
	}
	return endpointURL{scheme: scheme, host: host, path: path, query: u.RawQuery}, nil
}

// canonicalHost lower-cases a name and drops its trailing dot, writes an IP
// address in its standard form, and keeps the port only when it is not the
// scheme's default. Names are letters, digits, '-', '_' and '.'; anything else
// (escapes, zones, empty labels) is refused.
func canonicalHost(scheme, name, port string) (string, error) {
	host := strings.ToLower(name)
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "", errors.New("must not name an IPv6 zone")
		}
		host = a.String()
		if a.Is6() {
			host = "[" + host + "]"
		}
	} else {
		host = strings.TrimSuffix(host, ".")
		for _, label := range strings.Split(host, ".") {
			if label == "" || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
				return "", errors.New("must name its host with letters, digits, '-', '_' and '.', or an IP address")
			}
		}
	}
	if port == "" {
		return host, nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", errors.New("must have a port between 1 and 65535")
	}
	if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
		return host, nil
	}
	return host + ":" + strconv.Itoa(n), nil
}

// canonicalPath decodes the escapes of unreserved characters, upper-cases
// the others, and refuses an escaped '/', '\' or control character, a "."
// or ".." segment and an empty segment anywhere but at the end.
func canonicalPath(escaped string) (string, error) {
	if escaped == "" {
		return "/", nil
	}
	var b strings.Builder
	for i := 0; i < len(escaped); i++ {
		c := escaped[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(escaped) || !isHex(escaped[i+1]) || !isHex(escaped[i+2]) {
			return "", errors.New("has a malformed percent-escape")
		}
		v, _ := strconv.ParseUint(escaped[i+1:i+3], 16, 8)
		switch d := byte(v); {
		case d == '/' || d == '\\' || d < 0x20 || d == 0x7f:
			return "", errors.New("must not percent-encode '/', '\\' or control characters")
		case unreserved(d):
			b.WriteByte(d)
		default:
			b.WriteString("%" + strings.ToUpper(escaped[i+1:i+3]))
		}
		i += 2
	}
	p := b.String()
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		switch {
		case s == "." || s == "..":
			return "", errors.New("must not contain . or .. segments")
		case s == "" && i < len(segs)-1:
			return "", errors.New("must not contain empty segments (//)")
		}
	}
	return p, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unreserved is RFC 3986's: what a percent-escape must not change the meaning of.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
