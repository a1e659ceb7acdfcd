package api

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// compressMinBytes is the smallest body worth gzipping. Below it the whole
// answer, headers included, fits one TCP segment (1460 bytes) either way, so
// compressing would cost CPU and save no packet and no round trip; a page of
// messages or a checkpoint is far above it and shrinks several times over.
const compressMinBytes = 1024

// gzip.BestSpeed: clients are mostly on the same machine or network, where
// the server's CPU is scarcer than bandwidth; level 1 still takes most of
// what JSON gives up (a 46 KB page of 100 similar messages: 47 µs and 23x
// smaller at level 1, 186 µs and 24x at the default). klauspost's gzip,
// already a dependency, writes the stdlib's format at about twice its speed.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

// compress gzips the API's own answers (JSON, problems, NDJSON, the spec) of
// compressMinBytes or more for clients whose Accept-Encoding takes gzip.
// Everything else passes through untouched: HEAD, bodiless statuses (204, 304),
// answers that already have a Content-Encoding or Content-Range, file
// downloads of other types, and Server-Sent Events, whose events must reach
// the client the moment they are flushed. Streams (an export, an NDJSON append
// stream) are compressed as they go: a Flush pushes out what was written so
// far, compressed, so they still stream.
//
// ETags are left as they are although the bytes on the wire change: they name
// the resource's state (a block's version, the hash of the identity body),
// Vary: Accept-Encoding keeps caches from mixing the two encodings, and no
// route serves ranges. Weakening them, as some servers do, would make a
// gzipped block's ETag fail the strong comparison of If-Match.
func compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &compressWriter{ResponseWriter: w,
			accepts: r.Method != http.MethodHead && acceptsGzip(r.Header.Values("Accept-Encoding"))}
		next.ServeHTTP(cw, r)
		// Not deferred: a handler that panics (an export cut midway) must not
		// have its body end as a whole, valid gzip stream.
		cw.close()
	})
}

type compressState uint8

const (
	undecided compressState = iota // headers held until the body's size is known
	plain
	gzipping
)

// compressWriter holds back the status and the first compressMinBytes of a
// body whose length the handler did not declare, to learn whether it is worth
// compressing.
type compressWriter struct {
	http.ResponseWriter
	accepts bool
	status  int // 0 until WriteHeader (or the first Write)
	state   compressState
	buf     []byte
	gz      *gzip.Writer
}

func (c *compressWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *compressWriter) WriteHeader(code int) {
	switch {
	case code >= 100 && code < 200: // informational: not the answer
		c.ResponseWriter.WriteHeader(code)
		return
	case c.state != undecided:
		c.ResponseWriter.WriteHeader(code) // net/http reports the superfluous call
		return
	case c.status != 0:
		return
	}
	c.status = code
	h := c.Header()
	eligible := compressibleType(h.Get("Content-Type")) && h.Get("Content-Encoding") == "" && h.Get("Content-Range") == ""
	if eligible || code == http.StatusNotModified { // a 304 carries the Vary of the answer it stands for
		h.Add("Vary", "Accept-Encoding")
	}
	switch {
	case !eligible || !c.accepts || code == http.StatusNoContent || code == http.StatusNotModified:
		c.start(plain)
	case h.Get("Content-Length") != "":
		n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
		if err == nil && n >= compressMinBytes {
			c.start(gzipping)
		} else {
			c.start(plain)
		}
	}
}

func (c *compressWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	switch c.state {
	case plain:
		return c.ResponseWriter.Write(p)
	case gzipping:
		return c.gz.Write(p)
	}
	if len(c.buf)+len(p) < compressMinBytes {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	c.start(gzipping)
	if err := c.drain(); err != nil {
		return 0, err
	}
	return c.gz.Write(p)
}

// FlushError is what http.ResponseController calls; it pushes the compressed
// bytes so far to the client.
func (c *compressWriter) FlushError() error {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.state == undecided {
		// A handler that flushes is streaming: its length is unknown and
		// likely large, so it is compressed.
		c.start(gzipping)
		if err := c.drain(); err != nil {
			return err
		}
	}
	if c.state == gzipping {
		if err := c.gz.Flush(); err != nil {
			return err
		}
	}
	return http.NewResponseController(c.ResponseWriter).Flush()
}

// Flush makes the writer an http.Flusher for handlers that assert one.
func (c *compressWriter) Flush() { _ = c.FlushError() }

// start sends the held status with the headers of the chosen encoding.
func (c *compressWriter) start(s compressState) {
	c.state = s
	if s == gzipping {
		h := c.Header()
		h.Del("Content-Length") // the handler's, of the uncompressed body
		h.Set("Content-Encoding", "gzip")
		c.gz = gzipWriters.Get().(*gzip.Writer)
		c.gz.Reset(c.ResponseWriter)
	}
	c.ResponseWriter.WriteHeader(c.status)
}

// drain writes the held bytes in the chosen encoding.
func (c *compressWriter) drain() error {
	if len(c.buf) == 0 {
		return nil
	}
	var err error
	if c.state == gzipping {
		_, err = c.gz.Write(c.buf)
	} else {
		_, err = c.ResponseWriter.Write(c.buf)
	}
	c.buf = nil
	return err
}

// close ends the answer once the handler has returned.
func (c *compressWriter) close() {
	switch c.state {
	case undecided:
		if c.status == 0 {
			return // nothing written: net/http answers as it would have
		}
		c.start(plain) // short enough: net/http sets its Content-Length
		_ = c.drain()
	case gzipping:
		_ = c.gz.Close() // a client that went away has nothing to be told
		c.gz.Reset(io.Discard)
		gzipWriters.Put(c.gz)
		c.gz = nil
	}
}

// compressibleType lists what this API writes itself; text/event-stream is
// not there and must not be.
func compressibleType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "application/json", "application/problem+json", "application/x-ndjson", "application/yaml":
		return true
	}
	return false
}

// acceptsGzip reads Accept-Encoding (RFC 9110 §12.5.3): gzip (or x-gzip) with
// a non-zero q, or, when gzip is not named, * with a non-zero q.
func acceptsGzip(header []string) bool {
	gzipQ, anyQ := -1.0, -1.0
	for _, v := range header {
		for v != "" {
			var item string
			item, v, _ = strings.Cut(v, ",")
			coding, params, _ := strings.Cut(item, ";")
			q := 1.0
			for params != "" {
				var p string
				p, params, _ = strings.Cut(params, ";")
				if k, val, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					var err error
					if q, err = strconv.ParseFloat(strings.TrimSpace(val), 64); err != nil || !(q >= 0 && q <= 1) {
						q = 0 // not a qvalue: as good as refused
					}
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gzipQ = max(gzipQ, q)
			case "*":
				anyQ = max(anyQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return anyQ > 0
}
