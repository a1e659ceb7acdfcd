package client_test

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// tcpProxy relays connections to the server byte for byte, so that a
// stream's request and answer flow at once (an HTTP proxy in Go would read
// the whole request body before answering), and breaks them on cue: each new
// connection takes the next planned fault, if any. It counts the message
// lines that pass each way ("}\n": a raw line break never occurs inside a
// JSON line, and HTTP's own lines end "\r\n"), and the most that were on
// their way to the server and not answered at any moment.
type tcpProxy struct {
	url    string
	target string
	ln     net.Listener

	mu          sync.Mutex
	faults      []tcpFault
	connections int

	sent, answered atomic.Int64
	maxInFlight    atomic.Int64
}

// tcpFault breaks one connection: it is cut (both ends closed) once
// cutRequestAfter bytes of it went to the server, or cutAnswerAfter bytes
// of the answer came back; or the proxy answers it itself with answer,
// forwarding nothing.
type tcpFault struct {
	cutRequestAfter, cutAnswerAfter int64
	answer                          string
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{url: "http://" + ln.Addr().String(), target: strings.TrimPrefix(target, "http://"), ln: ln}
	go p.accept()
	t.Cleanup(func() { ln.Close() })
	return p
}

// plan makes the next connections fail as listed, one each.
func (p *tcpProxy) plan(faults ...tcpFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, faults...)
}

func (p *tcpProxy) connectionCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connections
}

func (p *tcpProxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.connections++
		var f tcpFault
		if len(p.faults) > 0 {
			f, p.faults = p.faults[0], p.faults[1:]
		}
		p.mu.Unlock()
		go p.relay(down, f)
	}
}

func (p *tcpProxy) relay(down net.Conn, f tcpFault) {
	if f.answer != "" {
		buf := make([]byte, 4096)
		_, _ = down.Read(buf) // the request's head, or some of it
		_, _ = io.WriteString(down, f.answer)
		down.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		down.Close()
		return
	}
	var once sync.Once
	cut := func() { once.Do(func() { down.Close(); up.Close() }) }
	go p.pipe(up, down, f.cutRequestAfter, &p.sent, cut)
	p.pipe(down, up, f.cutAnswerAfter, &p.answered, cut)
}

// pipe copies src to dst until either ends or limit bytes passed (0: no
// limit), counting the message lines in lines.
func (p *tcpProxy) pipe(dst, src net.Conn, limit int64, lines *atomic.Int64, cut func()) {
	defer cut()
	buf := make([]byte, 32<<10)
	var passed int64
	var last byte
	for {
		n, err := src.Read(buf)
		chunk := buf[:n]
		if limit > 0 && passed+int64(len(chunk)) > limit {
			chunk = chunk[:limit-passed]
		}
		for i, b := range chunk {
			prev := last
			if i > 0 {
				prev = chunk[i-1]
			}
			if b == '\n' && prev == '}' {
				lines.Add(1)
			}
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		if lines == &p.sent {
			inFlight := p.sent.Load() - p.answered.Load()
			for seen := p.maxInFlight.Load(); inFlight > seen && !p.maxInFlight.CompareAndSwap(seen, inFlight); {
				seen = p.maxInFlight.Load()
			}
		}
		if _, werr := dst.Write(chunk); werr != nil {
			return
		}
		passed += int64(len(chunk))
		if err != nil || limit > 0 && passed >= limit {
			return
		}
	}
}
