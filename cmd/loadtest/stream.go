package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// streamConn is one open NDJSON append stream: lines go into body, answers
// come back on answers, one per line, as each commits.
type streamConn struct {
	body    *io.PipeWriter
	resp    *http.Response
	answers *bufio.Reader
	line    []byte
	burst   []byte // window lines
}

// openStream starts a streaming append to url. The server sends its status only
// once it has read the first line, so the request runs while the first line is
// written, and the answer to that line is read here too.
func openStream(ctx context.Context, c *http.Client, url string, line []byte) (*streamConn, error) {
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, pr)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Do(req)
		done <- result{resp, err}
	}()
	line = append(append([]byte(nil), line...), '\n')
	if _, err := pw.Write(line); err != nil {
		return nil, err
	}
	r := <-done
	if r.err != nil {
		pw.CloseWithError(r.err)
		return nil, r.err
	}
	if r.resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(r.resp.Body, 512))
		r.resp.Body.Close()
		pw.Close()
		return nil, fmt.Errorf("POST %s: status %d: %s", req.URL.Path, r.resp.StatusCode, strings.TrimSpace(string(b)))
	}
	s := &streamConn{body: pw, resp: r.resp, answers: bufio.NewReader(r.resp.Body), line: line}
	if err := s.answer(); err != nil {
		s.abort()
		return nil, err
	}
	return s, nil
}

// send appends window messages at once and then reads their answers: window
// lines in flight on one connection, as a runtime that writes a turn's
// messages (or a bulk load) pipelines them; with window 1, one message at a
// time, as an agent loop that needs each stored message before it goes on.
func (s *streamConn) send(window int) error {
	if len(s.burst) != window*len(s.line) {
		s.burst = bytes.Repeat(s.line, window)
	}
	if _, err := s.body.Write(s.burst); err != nil {
		return err
	}
	for range window {
		if err := s.answer(); err != nil {
			return err
		}
	}
	return nil
}

func (s *streamConn) answer() error {
	got, err := s.answers.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("reading a stream's answer: %w", err)
	}
	if !strings.HasPrefix(string(got), `{"id":`) { // a stored message; anything else is a problem
		return fmt.Errorf("stream answered a problem: %s", strings.TrimSpace(string(got)))
	}
	return nil
}

// abort ends the stream without reading the rest.
func (s *streamConn) abort() {
	s.body.CloseWithError(errors.New("stream aborted"))
	s.resp.Body.Close()
}

// close ends the body, so the server finishes the stream, and reads it out.
func (s *streamConn) close() error {
	err := s.body.Close()
	rest, rerr := io.ReadAll(s.resp.Body)
	s.resp.Body.Close()
	if len(strings.TrimSpace(string(rest))) > 0 {
		return fmt.Errorf("stream answered after its last line: %.200s", rest)
	}
	return errors.Join(err, rerr)
}

// streamRound measures NDJSON streaming appends on a server of kind (logbook
// or floor): e.opts.clients streams, one session each, each sending
// e.opts.streamWindow messages at once and reading their answers before the
// next ones, the same messages as the single-append rounds send one per
// request.
func streamRound(ctx context.Context, e *env, kind string, round int) (stats, error) {
	name := fmt.Sprintf("stream-%s-r%d", kind, round)
	var (
		srv *server
		err error
	)
	if kind == "floor" {
		srv, err = startFloor(ctx, e.self, e.tmp, name)
	} else {
		srv, err = startLogbook(ctx, e.serverBin, e.tmp, name, e.opts.serverFlags...)
	}
	if err != nil {
		return stats{}, err
	}
	defer srv.stop()
	// A stream is a request that lasts the whole round: no client timeout.
	client := newClient()
	client.Timeout = 0
	defer client.CloseIdleConnections()

	urls, bodies, err := appendTargets(ctx, e, srv, name, e.opts.clients, func(i int) []byte { return mustJSON(messageJSON(i)) })
	if err != nil {
		return stats{}, err
	}
	streams := make([]*streamConn, len(urls))
	defer func() {
		for _, s := range streams {
			if s != nil {
				s.abort()
			}
		}
	}()
	// Opening a stream appends its first message, untimed, as the warm-up of
	// the single-append rounds does.
	for i := range urls {
		if streams[i], err = openStream(ctx, client, urls[i], bodies[i]); err != nil {
			return stats{}, fmt.Errorf("%s open: %w", name, err)
		}
	}
	window := e.opts.streamWindow
	st, err := measure(ctx, srv.pid, len(streams), e.opts.duration, window, func(_ context.Context, i int) error {
		return streams[i].send(window)
	})
	if err != nil {
		return stats{}, fmt.Errorf("%s: %w", name, err)
	}
	for i, s := range streams {
		streams[i] = nil
		if err := s.close(); err != nil {
			return stats{}, fmt.Errorf("%s close: %w", name, err)
		}
	}
	if err := srv.exitedEarly(); err != nil {
		return stats{}, fmt.Errorf("%s: %w", name, err)
	}
	return st, nil
}

// streamSection runs the streaming rounds and sets their CPU per message
// beside the single appends' (when the appends section ran).
func streamSection(ctx context.Context, e *env, rep *report, w io.Writer) error {
	rep.streamHeader(w, e.opts)
	for i := 1; i <= e.opts.streamRounds; i++ {
		st, err := streamRound(ctx, e, "logbook", i)
		if err != nil {
			return err
		}
		fl, err := streamRound(ctx, e, "floor", i)
		if err != nil {
			return err
		}
		rep.addStreamRound(w, i, st, fl)
	}
	rep.streamFooter(w)
	return nil
}
