"""A real Logbook server for the tests, and a proxy in front of it that
injects faults (an answer dropped after the server applied the request, a
503 or 429 the server never saw).

The server is built once per test run from this repository
(``go build -o <tmp>/server ./cmd/server`` at the repository root), or taken
from ``$LOGBOOK_SERVER_BIN``.
"""

from __future__ import annotations

import atexit
import http.client
import http.server
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

# clients/python/tests/harness.py -> the repository root
REPO_ROOT = Path(__file__).resolve().parents[3]

_build_lock = threading.Lock()
_binary: Optional[str] = None
_build_error: Optional[str] = None


def server_binary() -> str:
    """The server binary, built on first use (a failed build is not retried)."""
    global _binary, _build_error
    with _build_lock:
        if _binary:
            return _binary
        if _build_error:
            raise RuntimeError(_build_error)
        env_bin = os.environ.get("LOGBOOK_SERVER_BIN")
        if env_bin:
            _binary = env_bin
            return _binary
        out_dir = tempfile.mkdtemp(prefix="logbook-pytest-bin-")
        atexit.register(shutil.rmtree, out_dir, True)
        path = os.path.join(out_dir, "server")
        proc = subprocess.run(
            ["go", "build", "-o", path, "./cmd/server"],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if proc.returncode != 0:
            _build_error = "go build ./cmd/server failed in %s:\n%s" % (REPO_ROOT, proc.stdout)
            raise RuntimeError(_build_error)
        _binary = path
        return _binary


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One server process over a fresh database in a temporary directory."""

    def __init__(self, *flags: str) -> None:
        self.flags = flags
        self.dir = tempfile.mkdtemp(prefix="logbook-pytest-")
        self.db = os.path.join(self.dir, "x.db")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc: Optional["subprocess.Popen[bytes]"] = None
        self._log = open(os.path.join(self.dir, "server.log"), "w+b")

    def start(self) -> "Server":
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> "Server":
        self.proc = subprocess.Popen(
            [server_binary(), "--db", self.db, "--addr", "127.0.0.1:%d" % self.port, "--log-level", "warn", *self.flags],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited with %s:\n%s" % (self.proc.returncode, self.log()))
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError("the server did not become ready:\n%s" % self.log())

    def cli(self, *args: str) -> str:
        """Run a server command on this database (``keys create …``); its stdout."""
        proc = subprocess.run(
            [server_binary(), *args, "--db", self.db],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError("server %s failed: %s" % (" ".join(args), proc.stderr))
        return proc.stdout.strip()

    def log(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-4000:]

    def stop(self) -> None:
        if self._log.closed:
            return
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# ("drop", 0, None), ("status", 503, "Retry-After value"), or with a fourth
# element, the problem's code ("status", 409, None, "idempotency_in_progress").
Fault = Tuple[Any, ...]


class FaultProxy:
    """An HTTP proxy to ``upstream`` that records every request and applies
    planned faults to the requests they match, once each:

    - ``drop``: forward the request (the server applies it), then close the
      connection without answering: the client cannot know it was applied;
    - ``status``: answer a problem itself (503, 429) without forwarding.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.replace("http://", "")
        self.seen: List[Tuple[str, str, Dict[str, str]]] = []
        self._faults: List[Tuple[Callable[[str, str], bool], Fault]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                with proxy._lock:
                    proxy.seen.append((self.command, self.path, dict(self.headers)))
                    fault = None
                    for i, (match, f) in enumerate(proxy._faults):
                        if match(self.command, self.path):
                            fault = f
                            del proxy._faults[i]
                            break
                if fault and fault[0] == "status":
                    payload = (
                        '{"type":"urn:logbook:problem:x","title":"t","status":%d,"detail":"injected","code":"%s"}'
                        % (fault[1], fault[3] if len(fault) > 3 else "storage_unavailable" if fault[1] == 503 else "rate_limited")
                    ).encode()
                    self.send_response(fault[1])
                    self.send_header("Content-Type", "application/problem+json")
                    if fault[2] is not None:
                        self.send_header("Retry-After", fault[2])
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(proxy.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if fault and fault[0] == "drop":
                    self.close_connection = True  # applied upstream; the client hears nothing
                    return
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def fault(self, method: str, path_contains: str, fault: Fault) -> None:
        with self._lock:
            self._faults.append((lambda m, p: m == method and path_contains in p, fault))

    def requests(self, method: str, path_contains: str) -> List[Dict[str, str]]:
        with self._lock:
            return [h for (m, p, h) in self.seen if m == method and path_contains in p]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class CutProxy:
    """A TCP relay to ``upstream`` whose live connections can be cut at once
    (both ends closed, as a network failure would), for the live feed, or
    broken one by one as planned (:meth:`plan`), for message streams. It
    records the request head of every connection it relays."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.replace("http://", "").partition(":")
        self.upstream = (host, int(port))
        self.heads: List[bytes] = []
        self._pairs: List[Tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.url = "http://127.0.0.1:%d" % self._listener.getsockname()[1]
        self._closed = False
        self.limit: Optional[int] = None
        """When set, each new connection is cut after relaying this many bytes
        of the answer (mid-event, most likely)."""
        self._planned: List[Dict[str, Any]] = []
        self.sent = 0
        self.answered = 0
        self.max_in_flight = 0
        """Message lines relayed to the server and back (``}\\n``: a raw line
        break never occurs inside a JSON line, and HTTP's own lines end
        ``\\r\\n``), and the most on their way and not answered at once."""
        threading.Thread(target=self._accept, daemon=True).start()

    def plan(self, request_limit: Optional[int] = None, answer_limit: Optional[int] = None, answer: Optional[bytes] = None) -> None:
        """Break the next connection not yet planned: cut it after relaying
        ``request_limit`` bytes to the server or ``answer_limit`` back, or
        answer it with ``answer`` without forwarding anything."""
        with self._lock:
            self._planned.append({"request": request_limit, "answer_limit": answer_limit, "answer": answer})

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                plan = self._planned.pop(0) if self._planned else {}
            if plan.get("answer") is not None:
                try:
                    data = down.recv(65536)
                    with self._lock:
                        self.heads.append(data)
                    down.sendall(plan["answer"])
                except OSError:
                    pass
                down.close()
                continue
            try:
                up = socket.create_connection(self.upstream, timeout=5)
                up.settimeout(None)
            except OSError:
                down.close()
                continue
            with self._lock:
                if self._closed:
                    down.close()
                    up.close()
                    return
                self._pairs.append((down, up))
            answer_limit = plan.get("answer_limit") if plan.get("answer_limit") is not None else self.limit
            threading.Thread(target=self._pump, args=(down, up, True, plan.get("request")), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, False, answer_limit), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool, limit: Optional[int]) -> None:
        first = record
        last = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if first:
                    with self._lock:
                        self.heads.append(data)
                    first = False
                if limit is not None:
                    data = data[:limit]
                    limit -= len(data)
                lines = (last + data).count(b"}\n")
                last = data[-1:]
                with self._lock:
                    if record:
                        self.sent += lines
                        self.max_in_flight = max(self.max_in_flight, self.sent - self.answered)
                    else:
                        self.answered += lines
                dst.sendall(data)
                if limit == 0:
                    break
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def header(self, n: int, name: str) -> Optional[str]:
        """The value of header ``name`` in the ``n``-th request relayed."""
        with self._lock:
            head = self.heads[n].decode("latin-1")
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == name.lower():
                return v.strip()
        return None

    def cut(self) -> int:
        """Close every live connection; answers how many there were."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for down, up in pairs:
            for s in (down, up):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
        return len(pairs)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._listener.close()
        self.cut()


class ScriptedSSE:
    """A fake event feed: the ``n``-th connection gets ``script[n]``, a list of
    steps: ``bytes`` (sent as they are), a float (a pause in seconds),
    ``("status", code, retry_after)`` (an error answer instead of the stream)
    or ``"hold"`` (keep the connection open until the server closes). After
    the steps the connection is closed. It records each request's
    ``Last-Event-ID`` and query."""

    def __init__(self, script: List[List[object]]) -> None:
        self.script = script
        self.requests: List[Tuple[Optional[str], str]] = []
        self._stop = threading.Event()
        me = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                n = len(me.requests)
                me.requests.append((self.headers.get("Last-Event-ID"), self.path))
                steps = me.script[n] if n < len(me.script) else ["hold"]
                if steps and isinstance(steps[0], tuple):
                    _, code, retry_after = steps[0]
                    body = b'{"type":"urn:x","title":"t","status":%d,"code":"busy"}' % code
                    self.send_response(code)
                    self.send_header("Content-Type", "application/problem+json")
                    if retry_after is not None:
                        self.send_header("Retry-After", str(retry_after))
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self.wfile.flush()
                try:
                    for step in steps:
                        if isinstance(step, bytes):
                            self.wfile.write(step)
                            self.wfile.flush()
                        elif isinstance(step, float):
                            if me._stop.wait(step):
                                return
                        elif step == "hold":
                            me._stop.wait(30)
                            return
                except OSError:
                    return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
