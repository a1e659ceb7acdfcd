package main

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// parseCORSOrigins reads --cors-origins: a comma-separated list of origins,
// each scheme://host[:port] as a browser sends it in Origin, or "*". Origins
// are compared byte for byte, so each is written the way browsers write it:
// lower case, no default port, no trailing slash (tolerated here and dropped).
// "null", the origin of sandboxed frames and local files, is refused: any page
// can make one.
func parseCORSOrigins(v string) ([]string, error) {
	var out []string
	for o := range strings.SplitSeq(v, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o == "*" {
			out = append(out, o)
			continue
		}
		u, err := url.Parse(strings.TrimSuffix(o, "/"))
		if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "//") {
			return nil, fmt.Errorf("cors-origins: %q is not an origin; write scheme://host[:port], e.g. https://dashboard.example.com", o)
		}
		host := strings.ToLower(u.Host)
		scheme := strings.ToLower(u.Scheme)
		if port := u.Port(); (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
			host = strings.TrimSuffix(host, ":"+port)
		}
		out = append(out, scheme+"://"+host)
	}
	return out, nil
}

// refuseOpenCORS stops "*" from meeting open mode: with no key needed and every
// origin allowed, any web page the user visits could read and write the whole
// store through the user's browser.
func refuseOpenCORS(origins []string, allowOpen bool) error {
	if allowOpen && slices.Contains(origins, "*") {
		return fmt.Errorf("refusing --cors-origins '*' in open mode: every web page the user visits could read and write this server; " +
			"list the dashboard's origin instead (--cors-origins http://localhost:5173), or create a key first (logbook keys create --tenant NAME --scope admin)")
	}
	return nil
}
