"""Streams: many messages to one session on one request.

``POST /v1/sessions/{id}/messages`` with ``Content-Type: application/x-ndjson``
takes one message a line and answers each line as it commits, in order, while
the client is still sending: a turn's messages or a bulk load pay for HTTP
once, and no message waits for the one before it to reach the disk.

    results = client.append_many(session_id, messages)   # raises the first refusal

    with client.open_stream(session_id) as w:             # fed as messages come
        for m in produce():
            w.send(m)

Open one with :meth:`logbook.Client.append_many` or
:meth:`logbook.Client.open_stream`.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Mapping, Optional, Tuple

from .errors import LogbookError, Problem
from .types import Message

if TYPE_CHECKING:
    from .client import Client

__all__ = ["LineError", "LineResult", "StreamWriter"]

_REQUEST_MAX_BYTES = 32 << 20  # well below the server's bound on one stream (256 MiB by default)
_CHUNK_BYTES = 256 << 10
# One answer line is a stored message (at most 8 MiB as the server writes it):
# a server gone wrong cannot make the client hold more than this of one.
_MAX_ANSWER_LINE = 64 << 20


class LineError(LogbookError):
    """A message of a stream that was not stored, or whose fate is unknown.

    ``cause`` is a :class:`Problem` when the server refused it (its own
    problem, with ``line`` the stream's line; or, for a message after the one
    refused, ``stream_stopped``, made by this client: the server stored none
    of them), and ``refused`` is ``True``. Otherwise (the connection failed and
    the retries ran out) it may be stored: send it again with the same ``key``,
    and the server stores it once.
    """

    def __init__(self, line: int, key: str, cause: Exception) -> None:
        self.line = line
        self.key = key
        self.cause = cause
        self.results: Optional[List["LineResult"]] = None
        """From :meth:`Client.append_many`: every message's result, this one's included."""
        # A line's problem names the line in its detail too: say it once.
        super().__init__("line %d: %s" % (line, str(cause).replace(": line %d: " % line, ": ", 1)))

    @property
    def refused(self) -> bool:
        """The server refused it: it is not stored."""
        return isinstance(self.cause, Problem)

    @property
    def code(self) -> Optional[str]:
        """The problem's code (``validation_failed``, ``stream_stopped``, …); ``None`` when no answer came."""
        return self.cause.code if isinstance(self.cause, Problem) else None


@dataclass
class LineResult:
    """What became of one message of a stream."""

    line: int
    """The message's number in the stream, from 1, in the order sent."""
    key: str
    """Its ``idempotency_key``: its own, or the one the writer gave it."""
    message: Optional[Message] = None
    """The stored message (or the one stored before under ``key``)."""
    error: Optional[LineError] = None
    """Why there is no ``message``."""


@dataclass
class _Line:
    n: int
    key: str
    raw: bytes  # the JSON and its line break


class _Request:
    """One HTTP request of a stream; guarded by the writer's lock."""

    def __init__(self, first: int) -> None:
        self.start = time.monotonic()
        self.first = first  # the number of the first message it carries
        self.next = first  # the number of the next message to write on it
        self.bytes = 0
        self.ended = False  # its body is whole
        self.dead = False  # given up: stop writing


@dataclass
class _Outcome:
    progress: bool = False
    final: bool = False
    cause: Optional[Exception] = None  # why to try again; None: it ended whole
    after: Optional[float] = None


def _stopped_by(failed: int) -> Problem:
    """The server's ``stream_stopped``, which it does not send: its answer ends at the refused line."""
    detail = "line %d failed: this message and every later one were not appended" % failed
    body = {"type": "urn:logbook:problem:stream_stopped", "title": "Conflict", "status": 409, "code": "stream_stopped", "detail": detail}
    return Problem(409, "stream_stopped", "Conflict", detail, type="urn:logbook:problem:stream_stopped", body=body)


def _retryable(p: Problem) -> bool:
    """Whether a problem, for a whole request or one line, means the server
    stored nothing that a later try would not: busy (503, 429), the same key
    being served, or the stream unreadable (``malformed_json``: the lines are
    JSON this client made, so that is the server's read of the body failing)."""
    return p.status in (429, 503) or p.code in ("idempotency_in_progress", "malformed_json")


class StreamWriter:
    """Sends messages to one session as they are produced, many in flight on
    one request, and reports each one's result in order. Made by
    :meth:`logbook.Client.open_stream`.

    Every message carries an ``idempotency_key`` (its own, or ``key_prefix``
    followed by its number), so when the connection breaks the writer sends
    the messages not yet answered again on a new request, and the server
    stores each once. The first message the server refuses stops the stream:
    the ones after it are not stored (``stream_stopped``), and :meth:`send`
    and :meth:`close` raise its :class:`LineError`.

    :meth:`send` may be called from several threads (in the order of the
    calls); :meth:`results` is read from one. As a context manager it closes
    on exit.
    """

    def __init__(
        self,
        client: "Client",
        session_id: str,
        *,
        window: int = 256,
        window_bytes: int = 8 << 20,
        key_prefix: Optional[str] = None,
        request_age: float = 20.0,
        mode: Optional[str] = None,
    ) -> None:
        from .client import _seg

        if key_prefix is None:
            key_prefix = os.urandom(12).hex() + "."
        if len(key_prefix) > 200 or any(not (0x20 <= ord(c) <= 0x7E) for c in key_prefix):
            raise ValueError("key_prefix: at most 200 printable ASCII characters")
        u = urllib.parse.urlsplit(client.base_url)
        if mode is None:
            mode = "stream" if u.scheme == "http" else "batch"
        if mode not in ("stream", "batch"):
            raise ValueError("mode: 'stream' or 'batch'")
        if mode == "stream" and u.scheme != "http":
            raise ValueError("mode 'stream' needs an http:// base_url: an SSL socket is not safe to read and write from two threads")
        self._client = client
        self._https = u.scheme == "https"
        self._host = u.hostname or "127.0.0.1"
        self._port = u.port or (443 if self._https else 80)
        self._path = u.path.rstrip("/") + "/v1/sessions/%s/messages" % _seg(session_id)
        self._window = max(1, window)
        self._window_bytes = max(1, window_bytes)
        self._prefix = key_prefix
        self._request_age = request_age
        self._mode = mode

        self._send_lock = threading.Lock()  # orders sends; guards _next
        self._next = 1
        self._cv = threading.Condition()
        self._lines: List[_Line] = []  # sent or to send, not answered; oldest first
        self._base = 1  # the number of _lines[0] (of the next message when none)
        self._held = 0  # bytes of _lines
        self._carried = 0  # the highest number written on a request so far
        self._closed = False
        self._err: Optional[LineError] = None  # the first message not stored: the stream is over
        self._keep = False  # results() was called: keep the results for it
        self._out: List[LineResult] = []
        self._over = False  # no more results will come
        self._thread = threading.Thread(target=self._run, name="logbook-stream", daemon=True)
        self._thread.start()

    def __enter__(self) -> "StreamWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except LogbookError:
            pass  # the exception that left the block says more

    def key_of(self, n: int) -> str:
        """The key message ``n`` gets when it carries none."""
        return self._prefix + str(n)

    def send(self, message: Mapping[str, Any]) -> None:
        """Queue ``message`` as the stream's next one; returns once it is on
        its way, blocking while the window is full. After the stream stopped it
        raises the :class:`LineError` that stopped it (the message is not
        sent); after :meth:`close`, :class:`LogbookError`."""
        with self._send_lock:
            n = self._next
            body = dict(message)
            key = body.get("idempotency_key") or self.key_of(n)
            body["idempotency_key"] = key
            raw = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"
            with self._cv:
                while self._err is None and not self._closed and self._full(len(raw)):
                    self._cv.wait()
                if self._err is not None:
                    raise self._err
                if self._closed:
                    raise LogbookError("the stream is closed")
                self._lines.append(_Line(n, key, raw))
                self._held += len(raw)
                self._next += 1
                self._cv.notify_all()

    def _full(self, size: int) -> bool:
        return len(self._lines) + len(self._out) >= self._window or (self._held > 0 and self._held + size > self._window_bytes)

    def results(self) -> Iterator[LineResult]:
        """Each message's result in the order sent, from the first answered
        after this call (call it before the first :meth:`send` to see them
        all), ending once the stream is over. Results not yet read count
        against the window, so read them in another thread than the sends'.
        A writer whose results nobody asks for keeps none; :meth:`send` and
        :meth:`close` still raise the first failure."""
        with self._cv:
            self._keep = True
        return self._results()

    def _results(self) -> Iterator[LineResult]:
        try:
            while True:
                with self._cv:
                    while not self._out and not self._over:
                        self._cv.wait()
                    batch, self._out = self._out, []
                    self._cv.notify_all()  # room in the window
                if not batch:
                    return
                yield from batch
        finally:
            with self._cv:
                if not self._over:
                    self._keep = False  # nobody reads on: stop keeping them
                    self._out = []
                    self._cv.notify_all()

    def close(self) -> None:
        """End the stream: wait until every message sent is answered (or given
        up on), and raise the :class:`LineError` of the first one not stored,
        if any."""
        with self._send_lock, self._cv:
            self._closed = True
            self._cv.notify_all()
        self._thread.join()
        if self._err is not None:
            raise self._err

    # --- the requests ----------------------------------------------------

    def _answered(self, r: LineResult) -> None:
        self._held -= len(self._lines[0].raw)
        del self._lines[0]
        self._base += 1
        if r.error is not None and self._err is None:
            self._err = r.error
        if self._keep:
            self._out.append(r)
        self._cv.notify_all()

    def _stop_at(self, p: Problem) -> None:
        failed = self._lines[0].n
        while self._lines:
            l = self._lines[0]
            self._answered(LineResult(l.n, l.key, error=LineError(l.n, l.key, p if l.n == failed else _stopped_by(failed))))

    def _give_up(self, cause: Exception) -> None:
        while self._lines:
            l = self._lines[0]
            self._answered(LineResult(l.n, l.key, error=LineError(l.n, l.key, cause)))

    def _run(self) -> None:
        failures = 0  # tries in a row that answered nothing
        try:
            while True:
                with self._cv:
                    while not self._lines and not self._closed:
                        self._cv.wait()
                    if not self._lines:
                        return
                o = self._try()
                if o.final:
                    return
                if o.cause is None:
                    failures = 0
                    continue
                if o.progress:
                    failures = 0
                failures += 1
                if failures > self._client.max_retries or (o.after or 0) > self._client.max_retry_after:
                    with self._cv:
                        self._give_up(LogbookError("no answer after %d tries: %s" % (failures, o.cause)))
                    return
                wait = self._client._delay(failures - 1)
                self._client._sleep(max(wait, o.after or 0))
        except Exception as e:  # a fault of this code: leave nobody waiting
            with self._cv:
                self._give_up(e)
        finally:
            with self._cv:
                self._over = True
                self._cv.notify_all()

    def _open(self, r: _Request) -> bool:
        """Whether the request may carry more: every one carries what waits
        when it starts, and (in a stream) more until its age or size."""
        return r.next == r.first or (
            self._mode == "stream" and time.monotonic() - r.start < self._request_age and r.bytes < _REQUEST_MAX_BYTES
        )

    def _next_chunk(self, r: _Request) -> Optional[bytes]:
        """The next bytes of r's body, waiting for messages; ``None`` once it is whole."""
        with self._cv:
            while True:
                if r.dead:
                    return None
                i = r.next - self._base
                if self._open(r) and i < len(self._lines):
                    limit = _CHUNK_BYTES if self._mode == "stream" else _REQUEST_MAX_BYTES
                    parts = []
                    size = 0
                    while i < len(self._lines) and size < limit:
                        parts.append(self._lines[i].raw)
                        size += len(self._lines[i].raw)
                        i += 1
                        r.next += 1
                    r.bytes += size
                    self._carried = max(self._carried, r.next - 1)
                    return b"".join(parts)
                if not self._open(r) or self._closed or self._mode == "batch":
                    r.ended = True
                    return None
                # Wake to notice the request's age while waiting.
                self._cv.wait(max(0.0, self._request_age - (time.monotonic() - r.start)) + 0.01)

    def _headers(self) -> List[Tuple[str, str]]:
        h = self._client._headers({"Accept": "application/x-ndjson", "Content-Type": "application/x-ndjson"})
        return list(h.items())

    def _try(self) -> _Outcome:
        with self._cv:
            r = _Request(self._base)
            carried = self._carried  # messages an earlier request carried, stored or not
        conn: http.client.HTTPConnection
        timeout = self._client.timeout
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        pump: Optional[threading.Thread] = None
        sock: Optional[socket.socket] = None
        try:
            try:
                if self._mode == "batch":
                    body = b"".join(iter(lambda: self._next_chunk(r), None))
                    conn.request("POST", self._path, body=body, headers=dict(self._headers()))
                    resp = conn.getresponse()
                else:
                    conn.putrequest("POST", self._path, skip_accept_encoding=True)
                    for k, v in self._headers():
                        conn.putheader(k, v)
                    conn.putheader("Transfer-Encoding", "chunked")
                    conn.endheaders()
                    sock = conn.sock
                    assert sock is not None
                    # The answer comes as each line commits; the longest silence
                    # is a writer with nothing to send, until the request's age.
                    sock.settimeout(self._request_age + timeout)
                    pump = threading.Thread(target=self._pump, args=(r, sock), name="logbook-stream-body", daemon=True)
                    pump.start()
                    # The response is read here while the pump still writes:
                    # HTTPConnection.getresponse would wait for a whole request.
                    resp = http.client.HTTPResponse(sock, method="POST")
                    resp.begin()
            except (OSError, http.client.HTTPException) as e:
                return _Outcome(cause=e)
            if resp.status != 200:
                data = resp.read(64 << 10)
                from .client import _retry_after

                p = Problem.from_response(
                    resp.status,
                    data,
                    resp.getheader("Content-Type") or "",
                    resp.getheader("X-Request-Id"),
                    _retry_after(resp.msg),
                    resp.reason,
                )
                if _retryable(p):
                    return _Outcome(cause=p, after=p.retry_after)
                with self._cv:
                    # Refused whole; an earlier request that broke may have stored some of what it carried.
                    while self._lines and self._lines[0].n <= carried:
                        l = self._lines[0]
                        why = LogbookError("no answer, and the request that sent it again was refused: %s" % p)
                        self._answered(LineResult(l.n, l.key, error=LineError(l.n, l.key, why)))
                    if self._lines:
                        self._stop_at(p)
                return _Outcome(final=True)
            request_id = resp.getheader("X-Request-Id")
            progress = False
            try:
                while True:
                    text = resp.readline(_MAX_ANSWER_LINE + 1)
                    if len(text) > _MAX_ANSWER_LINE:
                        raise ValueError("a stream answer line is longer than 64 MiB")
                    if not text.endswith(b"\n"):  # the end, or an answer cut short
                        break
                    if not text.strip():
                        continue
                    o = self._answer(r, text, request_id)
                    if o is not None:
                        o.progress = progress
                        return o
                    progress = True
            except (OSError, http.client.HTTPException, ValueError) as e:
                return _Outcome(progress=progress, cause=e)
            with self._cv:
                whole = r.ended and self._base == r.next
            if whole:
                return _Outcome(progress=progress)
            return _Outcome(progress=progress, cause=LogbookError("the answer ended before the messages did"))
        finally:
            with self._cv:
                r.dead = True
                self._cv.notify_all()
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a pump blocked in sendall
                except OSError:
                    pass
            if pump is not None:
                pump.join()
            conn.close()
            if sock is not None:
                sock.close()

    def _pump(self, r: _Request, sock: socket.socket) -> None:
        """Writes the request's body in chunks, as messages come, until it is whole."""
        try:
            while True:
                chunk = self._next_chunk(r)
                if chunk is None:
                    if r.ended:
                        sock.sendall(b"0\r\n\r\n")
                    return
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            return  # the request is over; the reader reports why

    def _answer(self, r: _Request, text: bytes, request_id: Optional[str]) -> Optional[_Outcome]:
        """Match an answer line to the oldest message not answered; an outcome when the request is over."""
        try:
            doc = json.loads(text)
        except ValueError as e:
            return _Outcome(cause=e)
        with self._cv:
            if not self._lines or self._base >= r.next:
                return _Outcome(cause=LogbookError("the stream answered a message it was not sent"))
            l = self._lines[0]
            if not (isinstance(doc, dict) and isinstance(doc.get("code"), str) and isinstance(doc.get("status"), int)):
                self._answered(LineResult(l.n, l.key, message=doc))
                return None
            if _retryable(_problem(doc, request_id)):
                return _Outcome(cause=_problem(doc, request_id))
            # Name the stream's line, not the request's (a retried request starts again at 1).
            was = "line %d: " % (doc["line"] if isinstance(doc.get("line"), int) else l.n - r.first + 1)
            doc = dict(doc, line=l.n)
            if isinstance(doc.get("detail"), str) and doc["detail"].startswith(was):
                doc["detail"] = "line %d: %s" % (l.n, doc["detail"][len(was) :])
            self._stop_at(_problem(doc, request_id))
            return _Outcome(final=True)


def _problem(doc: Mapping[str, Any], request_id: Optional[str]) -> Problem:
    errors = doc.get("errors")
    return Problem(
        int(doc["status"]),
        str(doc["code"]),
        str(doc.get("title") or ""),
        str(doc.get("detail") or ""),
        type=str(doc.get("type") or ""),
        instance=doc.get("instance"),
        errors=[e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else None,  # type: ignore[misc]
        request_id=request_id,
        body=doc,
    )


def append_many(w: StreamWriter, messages: Iterable[Mapping[str, Any]]) -> List[LineResult]:
    """Send ``messages`` on ``w`` and answer every message's result, in order;
    raise the first message not stored (a :class:`LineError` whose ``results``
    holds every message's result)."""
    msgs = list(messages)
    results = w.results()
    sent: List[Optional[BaseException]] = [None]

    def sender() -> None:
        try:
            for m in msgs:
                w.send(m)
        except BaseException as e:  # the stream stopped, or a message is not JSON
            sent[0] = e
        try:
            w.close()
        except LogbookError:
            pass  # the caller's close raises it

    t = threading.Thread(target=sender, name="logbook-stream-send", daemon=True)
    t.start()
    out = list(results)
    t.join()
    err: Optional[BaseException] = None
    try:
        w.close()
    except LogbookError as e:
        err = e
    if err is None:
        err = sent[0]
    for n in range(len(out) + 1, len(msgs) + 1):  # never sent: the stream stopped first
        key = msgs[n - 1].get("idempotency_key") or w.key_of(n)
        if isinstance(err, LineError):
            cause: Exception = _stopped_by(err.line) if err.line < n else err.cause
        else:
            cause = err if isinstance(err, Exception) else LogbookError(str(err))
        out.append(LineResult(n, key, error=LineError(n, key, cause)))
    if isinstance(err, LineError):
        err.results = out
        raise err
    if err is not None:
        raise err
    return out
