"""The live event feed: Server-Sent Events of what commits, as an iterator.

``GET /v1/sessions/{id}/events`` (one session) and ``GET /v1/events`` (the
caller's tenant) stream ``text/event-stream``: each event has an ``id`` (an
opaque string bound to the caller's tenant: compare ids for equality only,
and send one back to resume), an ``event`` type and JSON ``data``; events
come in commit order. :class:`EventStream` reads that stream a line at a time as it
arrives, yields each event as an :class:`Event`, and, when the connection
drops or the server ends the stream, connects again with ``Last-Event-ID`` set
to the last id it yielded, so that the caller sees every event once, in order.

    with client.events(session_id, after_seq=0) as feed:
        for ev in feed:
            if ev.type == "message.appended":
                print(ev.data["seq"], ev.data["role"], ev.data["content"])

Open one with :meth:`logbook.Client.events` or :meth:`logbook.Client.tenant_events`.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union, cast

from .errors import LogbookError, Problem, TransportError
from .types import Message

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Event", "EventStream", "EventType", "EVENT_TYPES"]

log = logging.getLogger("logbook")

EventType = Literal[
    "message.appended",
    "session.created",
    "session.updated",
    "session.rewound",
    "compaction.created",
    "checkpoint.created",
]
"""The types of the feed's events (``event:``), as ``openapi.yaml`` lists them."""

EVENT_TYPES: Tuple[str, ...] = (
    "message.appended",
    "session.created",
    "session.updated",
    "session.rewound",
    "compaction.created",
    "checkpoint.created",
)

_DRAIN_TIMEOUT = 0.01  # how long a read waits once the idle time is up

DEFAULT_READ_TIMEOUT = 45.0
"""Seconds without a byte (the server sends a heartbeat every 15 s) after
which a connection counts as dead and is made again."""


@dataclass(frozen=True)
class Event:
    """One event of the live feed.

    ``data`` is the object the event is about, per ``type``:
    ``message.appended``: the ``Message`` (a message a later rewind removed
    is no longer in the feed; the ``session.rewound`` event tells); ``session.created`` and
    ``session.updated``: the ``Session``; ``session.rewound``: ``{"session_id",
    "to_seq", "removed_messages", "removed_checkpoints",
    "removed_compactions"}``; ``compaction.created``: the ``Compaction``;
    ``checkpoint.created``: the checkpoint without its state.
    """

    id: str
    """The event's id, opaque: compare for equality only; resume after it with ``after=id``."""
    type: str
    """One of :data:`EVENT_TYPES` (a later server may add types)."""
    data: Dict[str, Any]

    @property
    def session_id(self) -> Optional[str]:
        """The session the event is about."""
        if self.type.startswith("session.") and "session_id" not in self.data:
            v = self.data.get("id")  # the data of session.created/updated is the session
        else:
            v = self.data.get("session_id")
        return v if isinstance(v, str) else None

    @property
    def message(self) -> Optional[Message]:
        """The appended message, for a ``message.appended`` event (``None``
        otherwise)."""
        if self.type != "message.appended":
            return None
        return cast(Message, self.data)


_Raw = Tuple[Optional[str], str, Optional[str]]  # (id field, event type, data); data None: an id-only block


class _Parser:
    """The ``text/event-stream`` format (WHATWG HTML, "server-sent events"),
    fed a line at a time. Lines end with LF, CRLF or a lone CR; ``:`` lines
    are comments; several ``data:`` lines join with ``"\\n"``; an event is
    dispatched at a blank line, and an unfinished one is dropped when the
    stream ends (:meth:`reset`)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new stream: forget the unfinished event (a BOM may come first again)."""
        self._first = True
        self._cr = False  # the previous chunk ended with CR: an LF right after it is part of that line break
        self._id: Optional[str] = None
        self._type = ""
        self._data: List[str] = []
        self._has_data = False
        self.retry: Optional[int] = None

    def feed(self, chunk: bytes) -> List[_Raw]:
        """Parse ``chunk`` (one or more whole lines, as ``readline`` answers
        them); answers the events it completed."""
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = chunk.endswith(b"\r")
        text = chunk.decode("utf-8", "replace")
        if self._first and text:
            self._first = False
            if text.startswith("\ufeff"):
                text = text[1:]
        out: List[_Raw] = []
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # what followed the last line break
        for line in lines:
            got = self._line(line)
            if got is not None:
                out.append(got)
        return out

    def _line(self, line: str) -> Optional[_Raw]:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: heartbeats
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._type = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry":
            if value.isdigit():
                self.retry = int(value)
        return None

    def _dispatch(self) -> Optional[_Raw]:
        eid, etype, data, has = self._id, self._type or "message", "\n".join(self._data), self._has_data
        self._id, self._type, self._data, self._has_data = None, "", [], False
        if not has:
            return (eid, etype, None) if eid is not None else None
        return (eid, etype, data)


def _socket_of(resp: http.client.HTTPResponse) -> Optional[socket.socket]:
    """The response's socket, when it can be found (CPython: ``fp.raw._sock``)."""
    raw = getattr(getattr(resp, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def _set_timeout(resp: http.client.HTTPResponse, timeout: float) -> None:
    sock = _socket_of(resp)
    if sock is not None:
        try:
            sock.settimeout(timeout)
        except OSError:
            pass


def _interrupt(resp: http.client.HTTPResponse) -> None:
    """Wake a ``readline`` blocked on ``resp`` in another thread."""
    sock = _socket_of(resp)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class EventStream:
    """The events of one feed, in order, each once: iterate it.

    The stream is connected when it is made (so "from now" means from then,
    and an error answer such as ``404`` is raised at once as a
    :class:`~logbook.Problem`). It reads the response a line at a time and
    yields each event as it arrives. When the connection drops, goes silent
    for ``read_timeout`` seconds (the server sends a heartbeat every 15 s), or
    the server ends the stream (it does when it shuts down, and when a reader
    has not read for 30 s), it connects again after a short backoff (the
    client's ``backoff``, doubling up to ``max_backoff``) with
    ``Last-Event-ID``: the last id it yielded, so nothing is skipped, and any
    event the server sends again is dropped. A ``429``/``503`` or a failed
    connection is retried ``max_retries`` times in a row before it is raised
    (``TransportError``, ``Problem``); other error answers are raised at once.

    Iteration ends (``StopIteration``) after :meth:`close` (from any thread;
    also on leaving a ``with`` block), after ``max_events`` events, or when
    ``idle_timeout`` seconds pass without an event (heartbeats do not count;
    events that had already arrived are still yielded first; ``timed_out`` is
    then true).
    ``last_id`` is the id of the last event yielded (or seen): pass it as
    ``after=`` to a new stream to go on later.

    A stream started "from now" (no ``after``/``after_seq``) resumes exactly
    as well: the server opens every stream with ``id: <start>``, an id-only
    block, which becomes ``last_id`` until the first event.
    """

    def __init__(
        self,
        client: "Client",
        path: str,
        query: Mapping[str, Any],
        *,
        after: Optional[str] = None,
        after_seq: Optional[int] = None,
        max_events: Optional[int] = None,
        idle_timeout: Optional[float] = None,
        read_timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
    ) -> None:
        if after is not None and after_seq is not None:
            raise ValueError("give after or after_seq, not both")
        if max_events is not None and max_events < 0:
            raise ValueError("max_events must be 0 or more")
        self._client = client
        self.path = path
        self._query: Dict[str, Any] = {k: v for k, v in query.items() if v is not None}
        self._start: Dict[str, Any] = {}
        if after is not None:
            self._start["after"] = after
        elif after_seq is not None:
            self._start["after_seq"] = after_seq
        self.last_id: Optional[str] = after
        """The id of the last event yielded (or announced by the server); ``None`` before the first."""
        self.max_events = max_events
        self.idle_timeout = idle_timeout
        self.read_timeout = DEFAULT_READ_TIMEOUT if read_timeout is None else read_timeout
        self.max_retries = client.max_retries if max_retries is None else max(0, max_retries)
        self.count = 0
        """How many events were yielded."""
        self.reconnects = 0
        """How many times the stream connected again after a drop."""
        self.duplicates = 0
        """Events the server sent again after a reconnect (dropped, not yielded)."""
        self.timed_out = False
        """Iteration ended because no event came for ``idle_timeout`` seconds."""
        self._closed = False
        self._reading = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._resp: Optional[http.client.HTTPResponse] = None
        self._parser = _Parser()
        self._pending: Deque[Event] = deque()
        self._opened_at = 0.0
        self._got_event = False  # on the current connection
        self._attempt = 0  # reconnects since the last healthy connection: the backoff's exponent
        self._idle_deadline: Optional[float] = None
        self._touch()
        try:
            if max_events != 0 and not self._open():
                self.close()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return "EventStream(%r, last_id=%r, count=%d, %s)" % (self.path, self.last_id, self.count, state)

    # --- iteration -----------------------------------------------------------

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> Event:
        while True:
            if self._pending:
                return self._yield(self._pending.popleft())
            if self._closed or (self.max_events is not None and self.count >= self.max_events):
                self.close()
                raise StopIteration
            timeout = self._socket_timeout()
            resp = self._resp
            if timeout is None:  # out of idle time: what has arrived already is still delivered
                if resp is None or not self._read(resp, _DRAIN_TIMEOUT):
                    self.timed_out = not self._closed
                    self.close()
                    raise StopIteration
                continue
            if resp is None:
                if not self._reconnect():
                    self.close()
                    raise StopIteration
                continue
            self._read(resp, timeout)

    def _read(self, resp: http.client.HTTPResponse, timeout: float) -> bool:
        """Read one line of ``resp`` and parse it (into ``_pending``); drop the
        connection when it fails or ends. ``True`` when a line came."""
        _set_timeout(resp, timeout)
        with self._lock:
            if self._closed:
                return False
            self._reading = True
        err: Optional[BaseException] = None
        line = b""
        try:
            line = resp.readline()
        except (OSError, ValueError, http.client.HTTPException) as e:  # timeout, reset, closed under us
            err = e
        except Exception:
            if not self._closed:  # close() from another thread can leave the response half torn down
                raise
        finally:
            with self._lock:
                self._reading = False
                closed = self._closed
        if closed:
            self._drop(None)
            return False
        if not line:
            self._drop(err)
            return False
        for eid, etype, data in self._parser.feed(line):
            self._event(eid, etype, data)
        return True

    def _event(self, eid: Optional[str], etype: str, data: Optional[str]) -> None:
        n: Optional[str] = eid.strip() if eid is not None and eid.strip() else None
        if data is None:  # an id-only block: the server says where the feed is
            if n is not None:
                self.last_id = n
            return
        if n is not None and n == self.last_id:
            self.duplicates += 1  # sent again after a reconnect: seen already
            return
        if n is not None:
            self.last_id = n
        try:
            doc = json.loads(data)
        except ValueError:
            raise LogbookError("%s: event %s (%s) has data that is not JSON: %.200r" % (self.path, eid, etype, data)) from None
        self._got_event = True
        self._pending.append(Event(n if n is not None else (self.last_id or ""), etype, cast(Dict[str, Any], doc)))

    def _yield(self, ev: Event) -> Event:
        self.count += 1
        self._touch()
        if self.max_events is not None and self.count >= self.max_events:
            self.close()
        return ev

    def _touch(self) -> None:
        if self.idle_timeout is not None:
            self._idle_deadline = time.monotonic() + self.idle_timeout

    def _socket_timeout(self) -> Optional[float]:
        """How long the next read may wait; ``None`` once the idle time is up."""
        t = self.read_timeout
        if self._idle_deadline is not None:
            left = self._idle_deadline - time.monotonic()
            if left <= 0:
                return None
            t = min(t, left)
        return max(t, 0.001)

    # --- connections ---------------------------------------------------------

    def _open(self) -> bool:
        """Connect (from ``last_id`` when known, else from the start asked
        for), retrying 429/503 and failed connections. ``False`` when stopped
        meanwhile (closed, or out of idle time)."""
        failures = 0
        while True:
            timeout = self._socket_timeout()
            if timeout is None:
                self.timed_out = True
                return False
            headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
            query = dict(self._query)
            if self.last_id is not None:
                headers["Last-Event-ID"] = str(self.last_id)
            else:
                query.update(self._start)
            err: LogbookError
            try:
                resp = self._client.stream("GET", self.path, query=query, headers=headers, timeout=timeout)
            except Problem as p:
                if p.status not in (429, 503) or failures >= self.max_retries:
                    raise
                err = p
                wait = self._client._delay(failures)
                if p.retry_after is not None:
                    wait = min(p.retry_after, self._client.max_retry_after)
            except TransportError as e:
                if failures >= self.max_retries:
                    raise
                err = e
                wait = self._client._delay(failures)
            else:
                ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                if ctype != "text/event-stream":
                    resp.close()
                    raise LogbookError("%s: the answer is %r, not text/event-stream" % (self.path, ctype))
                with self._lock:
                    if self._closed:
                        resp.close()
                        return False
                    self._resp = resp
                self._parser.reset()
                self._opened_at = time.monotonic()
                self._got_event = False
                return True
            failures += 1
            log.debug("live feed %s: %s; connecting again in %.2fs", self.path, err, wait)
            if not self._pause(wait):
                return False

    def _drop(self, err: Optional[BaseException]) -> None:
        """Let the current connection go (it failed, ended, or was closed)."""
        with self._lock:
            resp, self._resp = self._resp, None
        if resp is not None:
            try:
                resp.close()
            except Exception:
                pass
        if self._got_event or time.monotonic() - self._opened_at >= self._client.max_backoff:
            self._attempt = 0  # it was a healthy connection: start the backoff over
        if not self._closed:
            log.debug("live feed %s: the stream %s at id %s", self.path, "failed (%s)" % err if err else "ended", self.last_id)

    def _reconnect(self) -> bool:
        wait = self._client._delay(self._attempt)
        self._attempt += 1
        if not self._pause(wait):
            return False
        self.reconnects += 1
        return self._open()

    def _pause(self, seconds: float) -> bool:
        """Wait (woken by :meth:`close`); ``False`` when stopped meanwhile."""
        if self._idle_deadline is not None:
            left = self._idle_deadline - time.monotonic()
            if left <= seconds:
                self._stop.wait(max(0.0, left))
                if not self._closed:
                    self.timed_out = True
                return False
        return not self._stop.wait(seconds) and not self._closed

    # --- stopping ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop: close the connection; iteration ends. Safe from another
        thread (a read blocked there returns at once) and to call twice."""
        with self._lock:
            if self._closed and self._resp is None:
                return
            self._closed = True
            resp = self._resp
            reading = self._reading
            if not reading:
                self._resp = None
        self._stop.set()
        if resp is not None:
            _interrupt(resp)
            if not reading:  # else the reading thread closes it when it wakes
                try:
                    resp.close()
                except Exception:
                    pass

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _types(types: Union[str, Sequence[str], None]) -> Optional[List[str]]:
    if types is None:
        return None
    return [types] if isinstance(types, str) else list(types)


def session_events(
    client: "Client",
    session_id: str,
    *,
    after: Optional[str] = None,
    after_seq: Optional[int] = None,
    types: Union[str, Sequence[str], None] = None,
    max_events: Optional[int] = None,
    idle_timeout: Optional[float] = None,
    read_timeout: Optional[float] = None,
    max_retries: Optional[int] = None,
) -> EventStream:
    """See :meth:`logbook.Client.events`."""
    from .client import _seg

    return EventStream(
        client,
        "/v1/sessions/%s/events" % _seg(session_id),
        {"type": _types(types)},
        after=after,
        after_seq=after_seq,
        max_events=max_events,
        idle_timeout=idle_timeout,
        read_timeout=read_timeout,
        max_retries=max_retries,
    )


def tenant_events(
    client: "Client",
    *,
    session_id: Optional[str] = None,
    after: Optional[str] = None,
    types: Union[str, Sequence[str], None] = None,
    max_events: Optional[int] = None,
    idle_timeout: Optional[float] = None,
    read_timeout: Optional[float] = None,
    max_retries: Optional[int] = None,
) -> EventStream:
    """See :meth:`logbook.Client.tenant_events`."""
    return EventStream(
        client,
        "/v1/events",
        {"session_id": session_id, "type": _types(types)},
        after=after,
        max_events=max_events,
        idle_timeout=idle_timeout,
        read_timeout=read_timeout,
        max_retries=max_retries,
    )
