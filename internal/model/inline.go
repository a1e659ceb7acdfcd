package model

import (
	"encoding/base64"
	"mime"
	"strings"
)

// Inline data: the providers take images and documents inline, as base64 in
// a data: URL (useChat sends attachments so), of several megabytes. A message
// row is no place for that: every page, search and export of the session
// would carry it. So a part whose data: URL holds standard base64 of more
// than MinLiftedChars is stored as a file (content-addressed, deduplicated,
// under the same visibility rules as an upload), and the part keeps its
// file_id and its URL cut after the comma ("data:image/png;base64,"): the
// lifted form. A read puts the bytes back (Inflate), so the client gets the
// part exactly as it sent it.
//
// Only base64 that re-encodes to the same text is lifted (standard alphabet,
// padded, no line breaks, zero padding bits): anything else could not be
// given back byte for byte, and stays in the row under the usual bounds.

// MinLiftedChars is the shortest base64 text a data: URL has lifted into a
// file: below it a file's row, chunk and reference cost more than the text.
const MinLiftedChars = 64 << 10

// InlineData is one data: URL's bytes found in a part, to be stored as a file.
type InlineData struct {
	Field     string // the part, as a client names it ("messages[2].content[0]")
	MediaType string // the file's, from the URL's header
	Data      []byte
}

// LiftableDataURL reports whether u is a data: URL to lift, and its decoded
// bytes and media type.
func LiftableDataURL(u string) (mediaType string, data []byte, ok bool) {
	if len(u) < MinLiftedChars || !strings.HasPrefix(u, "data:") {
		return "", nil, false
	}
	comma := strings.IndexByte(u, ',')
	if comma < 0 || !strings.HasSuffix(u[:comma], ";base64") {
		return "", nil, false
	}
	text := u[comma+1:]
	if len(text) < MinLiftedChars || len(text)%4 != 0 {
		return "", nil, false
	}
	data, err := base64.StdEncoding.Strict().DecodeString(text)
	// Strict still skips \r and \n: a text with them would come back without.
	if err != nil || base64.StdEncoding.EncodedLen(len(data)) != len(text) {
		return "", nil, false
	}
	return dataURLMediaType(u[len("data:") : comma-len(";base64")]), data, true
}

// dataURLMediaType is the media type a data: URL's header names, as an upload's
// Content-Type would be stored; RFC 2397's default when it names none.
func dataURLMediaType(h string) string {
	if h == "" {
		return "text/plain; charset=US-ASCII"
	}
	mt, params, err := mime.ParseMediaType(h)
	if err != nil || strings.Count(mt, "/") != 1 || len(h) > 255 {
		return "application/octet-stream"
	}
	return mime.FormatMediaType(mt, params)
}

// Lift puts p in the lifted form: the file fileID holds its URL's bytes.
func (p *Part) Lift(fileID string) {
	p.URL = p.URL[:strings.IndexByte(p.URL, ',')+1]
	p.FileID, p.lifted = fileID, true
}

// IsCutDataURL reports a base64 data: URL with nothing after its comma.
func IsCutDataURL(u string) bool {
	return strings.HasPrefix(u, "data:") && strings.HasSuffix(u, ";base64,") && strings.IndexByte(u, ',') == len(u)-1
}

// Lifted reports a part in the lifted form (one a store read back).
func (p *Part) Lifted() bool { return p.FileID != "" && IsCutDataURL(p.URL) }

// Inflate gives a lifted part its data: URL whole again, from its file's bytes.
func (p *Part) Inflate(data []byte) {
	p.URL += base64.StdEncoding.EncodeToString(data)
	p.FileID, p.lifted = "", false
}

// InflatedLen is the length of the URL Inflate would make of size bytes.
func (p *Part) InflatedLen(size int64) int64 {
	return int64(len(p.URL)) + int64(base64.StdEncoding.EncodedLen(int(size)))
}

// markLifted lets a stored message's lifted parts through the checks an
// import runs on it: an export writes them in the lifted form.
func markLifted(parts []Part) {
	for i := range parts {
		if parts[i].Lifted() {
			parts[i].lifted = true
		}
	}
}

// HasDataURL reports whether any part holds a data: URL: the one question an
// append without inline data pays for.
func HasDataURL(parts []Part) bool {
	for i := range parts {
		if strings.HasPrefix(parts[i].URL, "data:") {
			return true
		}
	}
	return false
}
