"""The blocking Logbook client: one method per route, over ``urllib.request``."""

from __future__ import annotations

import email.message
import email.utils
import errno
import gzip
import http.client
import json
import logging
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
)

from .errors import Problem, TransportError
from .events import EventStream, EventType, session_events, tenant_events
from .pagination import Pager, _page
from .types import (
    JSON,
    Agent,
    APIKey,
    Block,
    Checkpoint,
    Compaction,
    Content,
    File,
    Health,
    Message,
    MessageInput,
    MessageSearchResult,
    NewAPIKey,
    Page,
    Passage,
    PassageSearchResult,
    RepairResult,
    Resume,
    RewindResult,
    Role,
    Scope,
    Session,
    SessionContext,
    SessionStatus,
    ToolDef,
    ToolResult,
)

__all__ = ["Client", "Response", "AppendResult", "DEFAULT_URL", "new_idempotency_key"]

log = logging.getLogger("logbook")

DEFAULT_URL = "http://127.0.0.1:8080"
_USER_AGENT = "logbook-python/0.1"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Default of the optional fields of updates: the field is not sent (kept as is)."""


def new_idempotency_key() -> str:
    """A fresh key for one logical write (random; 36 characters)."""
    return "lbpy-" + os.urandom(16).hex()[:31]


def _uuid7_hex() -> str:
    """32 hex digits of a UUIDv7: time-ordered like the server's own ids."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = (rand >> 68) & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    v = ((ms & ((1 << 48) - 1)) << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return "%032x" % v


def _seg(s: str) -> str:
    # Ids are [A-Za-z0-9_.:-]; ":" is kept as is because the router matches the raw path.
    return urllib.parse.quote(str(s), safe=":")


def _canon(v: Any) -> Any:
    """v as it comes back from JSON (tuples become lists, and so on)."""
    return json.loads(json.dumps(v))


def _patch_applied(state: Any, patch: Mapping[str, Any]) -> bool:
    """Whether state reads as an RFC 7396 merge patch applied to something."""
    if not isinstance(state, dict):
        return False
    for k, v in patch.items():
        if v is None:
            if k in state:
                return False
        elif isinstance(v, dict):
            if not _patch_applied(state.get(k), v):
                return False
        elif k not in state or state[k] != _canon(v):
            return False
    return True


@dataclass
class Response:
    """One answer of the server, for :meth:`Client.request`."""

    status: int
    headers: email.message.Message
    body: bytes

    @property
    def request_id(self) -> Optional[str]:
        return self.headers.get("X-Request-Id")

    @property
    def replayed(self) -> bool:
        """``True`` when an append was answered from an earlier identical request
        (``Idempotent-Replayed: true``) and nothing was written."""
        return bool(self.headers.get("Idempotent-Replayed") == "true")

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None


@dataclass
class AppendResult:
    """What :meth:`Client.append_messages` stored (or found stored)."""

    messages: List[Message]
    replayed: bool
    """Everything was stored by an earlier attempt with the same key; nothing was written now."""
    idempotency_key: str
    """The ``Idempotency-Key`` the request carried (yours, or the one the client made)."""
    request_id: Optional[str] = None
    attempts: int = field(default=1)
    """How many times the request was sent (retries included)."""


class _Unsent(Exception):
    """The request did not reach the server (connection refused, no route, DNS)."""


class _Ambiguous(Exception):
    """The connection failed after the request may have reached the server."""


def _classify(exc: BaseException) -> Exception:
    reason: Any = exc
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        reason = exc.reason
    if isinstance(reason, (ConnectionRefusedError, socket.gaierror)):
        return _Unsent(str(reason))
    if isinstance(reason, OSError) and reason.errno in (
        errno.ECONNREFUSED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.EADDRNOTAVAIL,
    ):
        return _Unsent(str(reason))
    return _Ambiguous("%s: %s" % (type(reason).__name__, reason))


def _decoded(headers: email.message.Message, body: bytes) -> bytes:
    if body and (headers.get("Content-Encoding") or "").strip().lower() == "gzip":
        return gzip.decompress(body)  # a truncated body raises EOFError: the connection failed
    return body


def _retry_after(headers: email.message.Message) -> Optional[float]:
    raw = headers.get("Retry-After")
    if not raw:
        return None
    v = str(raw).strip()
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, float(when.timestamp()) - time.time())


Recover = Callable[[Problem], Any]
"""Called with the problem a retry got after an earlier attempt may have been
applied; answers what to return instead, or ``None`` to raise the problem."""


class Client:
    """A blocking client of one Logbook server.

    ``base_url`` defaults to ``$LOGBOOK_URL``, then ``http://127.0.0.1:8080``;
    ``api_key`` to ``$LOGBOOK_API_KEY`` (sent as ``Authorization: Bearer …``;
    none is needed in open mode, a server on loopback with no key yet).

    **Retries.** A request is sent again, at most ``max_retries`` times, on
    ``429`` and ``503`` (after ``Retry-After`` when the server says, at most
    ``max_retry_after`` seconds; otherwise after an exponential backoff from
    ``backoff`` to ``max_backoff`` seconds, with jitter) and when the
    connection fails. Any other 4xx or 5xx is raised at once as a
    :class:`Problem`. A write is only resent after a connection failure when the
    resend is safe: an append carries the same ``Idempotency-Key`` (made per
    logical write unless you give one), so the server stores it once and
    answers the retry with what it stored; a new session or agent carries an id
    the client chose, so a resend that finds it made returns it. Writes that
    cannot be made safe (a fenced rewind, an archival insert, a block append)
    raise :class:`TransportError` with ``maybe_applied=True`` instead.

    The client is thread-safe: it keeps no per-request state.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff: float = 0.2,
        max_backoff: float = 5.0,
        max_retry_after: float = 60.0,
        user_agent: Optional[str] = None,
        opener: Optional[urllib.request.OpenerDirector] = None,
    ) -> None:
        url = base_url or os.environ.get("LOGBOOK_URL") or DEFAULT_URL
        self.base_url = url.rstrip("/")
        self.api_key = api_key if api_key is not None else (os.environ.get("LOGBOOK_API_KEY") or None)
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.user_agent = user_agent or _USER_AGENT
        self._opener = opener or urllib.request.build_opener()
        self._sleep: Callable[[float], None] = time.sleep

    def __repr__(self) -> str:
        return "Client(%r, api_key=%s)" % (self.base_url, "set" if self.api_key else "None")

    # --- transport -----------------------------------------------------------

    def _url(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        url = self.base_url + path
        if query:
            pairs: List[Tuple[str, str]] = []
            for k, v in query.items():
                if v is None:
                    continue
                if isinstance(v, (list, tuple)):
                    pairs.extend((k, str(x)) for x in v)  # repeated: role=user&role=tool
                elif isinstance(v, bool):
                    pairs.append((k, "true" if v else "false"))
                else:
                    pairs.append((k, str(v)))
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        return url

    def _headers(self, extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        if extra:
            h.update(extra)
        return h

    def _send_once(self, method: str, url: str, data: Optional[bytes], headers: Mapping[str, str]) -> Response:
        req = urllib.request.Request(url, data=data, method=method, headers=dict(headers))
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                return Response(resp.status, resp.headers, _decoded(resp.headers, resp.read()))
        except urllib.error.HTTPError as e:
            try:
                body = _decoded(e.headers, e.read())
            except (OSError, EOFError, http.client.HTTPException):
                body = b""
            finally:
                e.close()
            return Response(e.code, e.headers, body)
        except (OSError, EOFError, http.client.HTTPException, urllib.error.URLError) as e:
            raise _classify(e) from e

    def _delay(self, attempt: int) -> float:
        d = min(self.max_backoff, self.backoff * (2.0**attempt))
        return d * (0.5 + random.random() / 2)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        json_body: Any = UNSET,
        data: Optional[bytes] = None,
        content_type: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        idempotent: Optional[bool] = None,
    ) -> Response:
        """Send one request (with the retries above) and answer the response, or
        raise :class:`Problem` for a 4xx/5xx. For routes this client has no method
        for. ``idempotent`` says whether a resend after a connection failure is
        safe; by default, for ``GET``, ``HEAD``, ``PUT`` and ``DELETE``."""
        resp, _ = self._request(
            method,
            path,
            query=query,
            json_body=json_body,
            data=data,
            content_type=content_type,
            headers=headers,
            idempotent=method.upper() in ("GET", "HEAD", "PUT", "DELETE") if idempotent is None else idempotent,
        )
        return resp

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        json_body: Any = UNSET,
        data: Optional[bytes] = None,
        content_type: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        idempotent: bool = False,
        recover: Optional[Recover] = None,
    ) -> "tuple[Response, int]":
        """Answers the response and how many attempts it took. ``recover``
        gets a problem that a resend met after an earlier attempt may have been
        applied (a 409 for a session the first attempt made), and may answer a
        response instead (raising ``_Recovered``)."""
        h = self._headers(headers)
        h.setdefault("Accept-Encoding", "gzip")  # the server gzips answers of 1 KiB or more
        if json_body is not UNSET:
            data = json.dumps(json_body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
            h["Content-Type"] = "application/json"
        elif content_type is not None:
            h["Content-Type"] = content_type
        url = self._url(path, query)
        write = method.upper() not in ("GET", "HEAD")
        key = h.get("Idempotency-Key")
        attempt = 0
        maybe_applied = False  # an earlier attempt may have reached the server

        def failed(e: Exception, applied: bool, why: str) -> TransportError:
            return TransportError(
                "%s %s: %s%s" % (method, path, e, why), maybe_applied=applied, cause=e, idempotency_key=key
            )

        while True:
            try:
                resp = self._send_once(method, url, data, h)
            except _Unsent as e:
                if attempt >= self.max_retries:
                    raise failed(e, maybe_applied and write, " (after %d attempts)" % (attempt + 1)) from None
            except _Ambiguous as e:
                if write and not idempotent and recover is None:
                    raise failed(e, True, "; the request may have been applied") from None
                maybe_applied = True
                if attempt >= self.max_retries:
                    raise failed(e, write, " (after %d attempts)" % (attempt + 1)) from None
            else:
                if resp.status < 400:
                    return resp, attempt + 1
                problem = Problem.from_response(
                    resp.status,
                    resp.body,
                    resp.headers.get("Content-Type", ""),
                    resp.request_id,
                    _retry_after(resp.headers),
                    http.client.responses.get(resp.status, ""),
                )
                if resp.status in (429, 503) and attempt < self.max_retries:
                    wait = problem.retry_after
                    wait = self._delay(attempt) if wait is None else min(wait, self.max_retry_after)
                    log.debug("%s %s: %s; retrying in %.2fs", method, path, problem.code, wait)
                    self._sleep(wait)
                    attempt += 1
                    continue
                if maybe_applied and recover is not None:
                    got = recover(problem)
                    if got is not None:
                        raise _Recovered(got)
                raise problem
            wait = self._delay(attempt)
            log.debug("%s %s: connection failed; retrying in %.2fs", method, path, wait)
            self._sleep(wait)
            attempt += 1

    def _call(self, method: str, path: str, *, recover: Optional[Recover] = None, **kw: Any) -> Any:
        """The response's JSON; what ``recover`` found instead, if it found something."""
        try:
            resp, _ = self._request(method, path, recover=recover, **kw)
        except _Recovered as r:
            return r.value
        return resp.json()

    def stream(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        data: Optional[bytes] = None,
        timeout: Optional[float] = None,
    ) -> http.client.HTTPResponse:
        """Open a request and answer the live response, unread, for bodies read
        as they arrive (NDJSON; the live event feed reads through it: see
        :mod:`logbook.events`). Close it when done. No retries; an error status
        raises :class:`Problem`."""
        req = urllib.request.Request(
            self._url(path, query), data=data, method=method, headers=self._headers(headers)
        )
        try:
            return cast(http.client.HTTPResponse, self._opener.open(req, timeout=timeout or self.timeout))
        except urllib.error.HTTPError as e:
            body = e.read()
            e.close()
            raise Problem.from_response(
                e.code,
                body,
                e.headers.get("Content-Type", ""),
                e.headers.get("X-Request-Id"),
                _retry_after(e.headers),
                http.client.responses.get(e.code, ""),
            ) from None
        except (OSError, http.client.HTTPException) as e:
            raise TransportError("%s %s: %s" % (method, path, e), cause=e) from None

    def _pager(self, path: str, query: Mapping[str, Any], cursor: Optional[str]) -> Pager[Any]:
        def fetch(c: Optional[str]) -> Page:
            q = dict(query)
            if c:
                q["cursor"] = c
            return _page(self._call("GET", path, query=q))

        return Pager(fetch, cursor)

    # --- health --------------------------------------------------------------

    def healthz(self) -> Health:
        """``GET /healthz``: the process is up (with its version)."""
        return cast(Health, self._call("GET", "/healthz"))

    def readyz(self) -> Health:
        """``GET /readyz``: the database answers."""
        return cast(Health, self._call("GET", "/readyz"))

    # --- sessions ------------------------------------------------------------

    def create_session(
        self,
        id: Optional[str] = None,
        *,
        agent_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
    ) -> Session:
        """Create a session (status ``created``). Without ``id`` the client makes
        one like the server's (``ses_`` + a UUIDv7), so that a resend after a
        connection failure cannot make a second session. A taken ``id`` is a
        ``409 conflict``."""
        sid = id or "ses_" + _uuid7_hex()
        body: Dict[str, Any] = {"id": sid}
        if agent_id is not None:
            body["agent_id"] = agent_id
        if title is not None:
            body["title"] = title
        if metadata is not None:
            body["metadata"] = dict(metadata)

        def recover(p: Problem) -> Optional[Session]:
            # A resend found the id taken: ours if it is the session we asked for.
            if p.code != "conflict":
                return None
            s = self.get_session(sid)
            same = (
                s["agent_id"] == agent_id
                and s["title"] == title
                and s["metadata"] == _canon(dict(metadata or {}))
                and s["message_count"] == 0
            )
            return s if same else None

        return cast(Session, self._call("POST", "/v1/sessions", json_body=body, recover=recover))

    def get_session(self, id: str) -> Session:
        return cast(Session, self._call("GET", "/v1/sessions/" + _seg(id), idempotent=True))

    def update_session(
        self,
        id: str,
        *,
        status: Optional[SessionStatus] = None,
        title: Optional[str] = UNSET,
        metadata: Optional[Mapping[str, JSON]] = UNSET,
    ) -> Session:
        """``PATCH``: a new ``status`` (``invalid_transition`` if not allowed),
        ``title`` (``None`` clears it), ``metadata`` as an RFC 7396 merge patch
        (a ``None`` value removes a key). Fields left out are kept."""
        body: Dict[str, Any] = {}
        if status is not None:
            body["status"] = status
        if title is not UNSET:
            body["title"] = title
        if metadata is not UNSET:
            body["metadata"] = None if metadata is None else dict(metadata)
        return cast(Session, self._call("PATCH", "/v1/sessions/" + _seg(id), json_body=body, idempotent=True))

    def close_session(self, id: str) -> Session:
        """Soft close (``DELETE``): status ``completed``; nothing is deleted."""
        return cast(Session, self._call("DELETE", "/v1/sessions/" + _seg(id), idempotent=True))

    def list_sessions(
        self,
        *,
        status: Optional[SessionStatus] = None,
        agent_id: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        due_before: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[Session]:
        """Sessions, newest first. ``metadata={"channel": "web"}`` filters on
        ``metadata.channel=web`` (values compare as their text). ``limit`` is the
        page size (1-200), not a total: the pager fetches every page."""
        q: Dict[str, Any] = {
            "status": status,
            "agent_id": agent_id,
            "created_after": created_after,
            "created_before": created_before,
            "due_before": due_before,
            "limit": limit,
        }
        for k, v in (metadata or {}).items():
            q["metadata." + k] = v if isinstance(v, str) else json.dumps(v)
        return self._pager("/v1/sessions", q, cursor)

    def fork_session(
        self,
        id: str,
        *,
        at_seq: Optional[int] = None,
        new_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
    ) -> Session:
        """A new session sharing the first ``at_seq`` messages (default: all)."""
        fid = new_id or "ses_" + _uuid7_hex()
        body: Dict[str, Any] = {"id": fid}
        if at_seq is not None:
            body["at_seq"] = at_seq
        if title is not None:
            body["title"] = title
        if metadata is not None:
            body["metadata"] = dict(metadata)

        def recover(p: Problem) -> Optional[Session]:
            if p.code != "conflict":
                return None
            s = self.get_session(fid)
            return s if s["parent_id"] == id else None

        return cast(Session, self._call("POST", "/v1/sessions/%s/fork" % _seg(id), json_body=body, recover=recover))

    # --- messages ------------------------------------------------------------

    def append_message(
        self,
        session_id: str,
        message: Union[MessageInput, Mapping[str, Any], None] = None,
        /,
        *,
        idempotency_key: Optional[str] = None,
        expected_last_seq: Optional[int] = None,
        **fields: Any,
    ) -> Message:
        """Append one message: ``append_message(sid, {"role": "user", "content": "hi"})``
        or ``append_message(sid, role="user", content="hi")``.

        The request carries ``Idempotency-Key: idempotency_key`` (a fresh key when
        you give none), so the client's own retries store it once. Give your own
        key to make a retry after a crash of your process safe too.
        ``expected_last_seq`` refuses the append (``409 stale_seq``) if another
        write moved the session's ``last_seq``."""
        body: Dict[str, Any] = dict(message or {})
        body.update(fields)
        if expected_last_seq is not None:
            body["expected_last_seq"] = expected_last_seq
        key = idempotency_key or new_idempotency_key()
        return cast(
            Message,
            self._call(
                "POST",
                "/v1/sessions/%s/messages" % _seg(session_id),
                json_body=body,
                headers={"Idempotency-Key": key},
                idempotent=True,
            ),
        )

    def append_messages(
        self,
        session_id: str,
        messages: Iterable[Union[MessageInput, Mapping[str, Any]]],
        *,
        idempotency_key: Optional[str] = None,
        expected_last_seq: Optional[int] = None,
    ) -> AppendResult:
        """Append 1-1000 messages, all or nothing, with consecutive seqs
        (``POST /v1/sessions/{id}/messages/batch``). One ``Idempotency-Key``
        names the whole batch (see :meth:`append_message`); ``result.replayed``
        says an earlier attempt had stored it all. ``expected_last_seq``
        refuses the batch (``409 stale_seq``) if another write moved the
        session's ``last_seq``."""
        body: Dict[str, Any] = {"messages": [dict(m) for m in messages]}
        if expected_last_seq is not None:
            body["expected_last_seq"] = expected_last_seq
        key = idempotency_key or new_idempotency_key()
        resp, attempts = self._request(
            "POST",
            "/v1/sessions/%s/messages/batch" % _seg(session_id),
            json_body=body,
            headers={"Idempotency-Key": key},
            idempotent=True,
        )
        doc = resp.json()
        return AppendResult(
            messages=doc["data"],
            replayed=resp.replayed,
            idempotency_key=key,
            request_id=resp.request_id,
            attempts=attempts,
        )

    def get_message(self, session_id: str, message_id: str) -> Message:
        return cast(Message, self._call("GET", "/v1/sessions/%s/messages/%s" % (_seg(session_id), _seg(message_id))))

    def list_messages(
        self,
        session_id: str,
        *,
        order: Optional[str] = None,
        after_seq: Optional[int] = None,
        before_seq: Optional[int] = None,
        role: Optional[Role] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[Message]:
        """The session's messages in ``seq`` order (``order="desc"``: newest
        first), fetched lazily a page (``limit``, 1-200) at a time."""
        q = {"order": order, "after_seq": after_seq, "before_seq": before_seq, "role": role, "limit": limit}
        return self._pager("/v1/sessions/%s/messages" % _seg(session_id), q, cursor)

    def rewind(
        self,
        session_id: str,
        to_seq: int,
        *,
        expected_last_seq: Optional[int] = None,
        messages: Optional[Sequence[Union[MessageInput, Mapping[str, Any]]]] = None,
    ) -> RewindResult:
        """Drop the messages after ``to_seq`` (``0`` clears the session), and
        append ``messages`` as the new tail in the same transaction.
        ``expected_last_seq`` fences it (``409 stale_seq`` if another write came
        first). A closed session is ``409 session_closed``.

        Without the fence a rewind is idempotent and is resent after a
        connection failure; with it, a connection failure raises
        :class:`TransportError` (``maybe_applied``): read the session back."""
        body: Dict[str, Any] = {"to_seq": to_seq}
        if expected_last_seq is not None:
            body["expected_last_seq"] = expected_last_seq
        if messages:
            body["messages"] = [dict(m) for m in messages]
        return cast(
            RewindResult,
            self._call(
                "POST",
                "/v1/sessions/%s/rewind" % _seg(session_id),
                json_body=body,
                idempotent=expected_last_seq is None,
            ),
        )

    def search_messages(
        self,
        q: str,
        *,
        agent_id: Optional[str] = None,
        role: Union[Role, Sequence[Role], None] = None,
        session_id: Optional[str] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> MessageSearchResult:
        """Full-text search over the tenant's messages (or one agent's), best
        first. ``index_lag`` in the answer says how many messages are not
        searchable yet; ``partial`` that some words were too common to rank
        over every message."""
        path = "/v1/messages/search" if agent_id is None else "/v1/agents/%s/messages/search" % _seg(agent_id)
        roles = [role] if isinstance(role, str) else role
        query = {"q": q, "role": roles, "session_id": session_id, "after": after, "before": before, "limit": limit}
        return cast(MessageSearchResult, self._call("GET", path, query=query))

    def get_context(
        self, session_id: str, *, max_tokens: Optional[int] = None, include_blocks: bool = False
    ) -> SessionContext:
        """What the next LLM call needs: the latest compaction, system and
        developer messages, and the newest messages that fit ``max_tokens``."""
        q = {"max_tokens": max_tokens, "include": "blocks" if include_blocks else None}
        return cast(SessionContext, self._call("GET", "/v1/sessions/%s/context" % _seg(session_id), query=q))

    def create_compaction(
        self,
        session_id: str,
        through_seq: int,
        summary: Content,
        *,
        tokens: Optional[int] = None,
        model: Optional[str] = None,
        provider_item: Optional[Mapping[str, JSON]] = None,
    ) -> Compaction:
        """Record that ``summary`` stands for messages 1..``through_seq``."""
        body: Dict[str, Any] = {"through_seq": through_seq, "summary": summary}
        if tokens is not None:
            body["tokens"] = tokens
        if model is not None:
            body["model"] = model
        if provider_item is not None:
            body["provider_item"] = dict(provider_item)

        def recover(p: Problem) -> Optional[Compaction]:
            if p.status != 422:
                return None
            latest = self.list_compactions(session_id, limit=1).first_page()["data"]
            if latest and latest[0]["through_seq"] == through_seq and latest[0]["summary"] == _canon(summary):
                return cast(Compaction, latest[0])
            return None

        return cast(
            Compaction,
            self._call("POST", "/v1/sessions/%s/compactions" % _seg(session_id), json_body=body, recover=recover),
        )

    def list_compactions(
        self, session_id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Pager[Compaction]:
        return self._pager("/v1/sessions/%s/compactions" % _seg(session_id), {"limit": limit}, cursor)

    # --- checkpoints, resume, repair -----------------------------------------

    def put_checkpoint(
        self,
        session_id: str,
        iteration: int,
        state: Mapping[str, JSON],
        *,
        expected_iteration: Optional[int] = None,
    ) -> Checkpoint:
        """Write the loop state of ``iteration``, which must be above the latest;
        with ``expected_iteration`` (the iteration you last saw, 0 for none) a
        second worker's write fails with ``409 stale_iteration``
        (``problem.latest_iteration``)."""
        body: Dict[str, Any] = {"iteration": iteration, "state": dict(state)}
        if expected_iteration is not None:
            body["expected_iteration"] = expected_iteration

        def recover(p: Problem) -> Optional[Checkpoint]:
            # A resend lost to the first attempt if that one wrote this very state.
            if p.code != "stale_iteration" or p.latest_iteration != iteration:
                return None
            c = self.get_checkpoint(session_id, iteration)
            return c if c["state"] == _canon(dict(state)) else None

        return cast(
            Checkpoint,
            self._call("PUT", "/v1/sessions/%s/checkpoint" % _seg(session_id), json_body=body, recover=recover),
        )

    def patch_checkpoint(
        self,
        session_id: str,
        iteration: int,
        state_patch: Mapping[str, JSON],
        *,
        expected_iteration: Optional[int] = None,
    ) -> Checkpoint:
        """Write ``iteration`` as the latest state with ``state_patch`` (an RFC
        7396 merge patch) applied; the same fence as :meth:`put_checkpoint`.
        ``409 no_checkpoint`` when there is none to patch yet."""
        body: Dict[str, Any] = {"iteration": iteration, "state_patch": dict(state_patch)}
        if expected_iteration is not None:
            body["expected_iteration"] = expected_iteration

        def recover(p: Problem) -> Optional[Checkpoint]:
            if p.code != "stale_iteration" or p.latest_iteration != iteration:
                return None
            c = self.get_checkpoint(session_id, iteration)
            return c if _patch_applied(c["state"], state_patch) else None

        return cast(
            Checkpoint,
            self._call("PATCH", "/v1/sessions/%s/checkpoint" % _seg(session_id), json_body=body, recover=recover),
        )

    def get_checkpoint(self, session_id: str, iteration: Optional[int] = None) -> Checkpoint:
        """The latest checkpoint, or that of ``iteration`` (``404`` when none)."""
        path = "/v1/sessions/%s/checkpoint" % _seg(session_id)
        if iteration is not None:
            path = "/v1/sessions/%s/checkpoints/%d" % (_seg(session_id), iteration)
        return cast(Checkpoint, self._call("GET", path))

    def list_checkpoints(
        self, session_id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Pager[Checkpoint]:
        """Newest iteration first."""
        return self._pager("/v1/sessions/%s/checkpoints" % _seg(session_id), {"limit": limit}, cursor)

    def resume(self, session_id: str) -> Resume:
        """The hand-over for a new worker: session, latest checkpoint, messages
        since, pending tool calls and a validation report (with repairs)."""
        return cast(Resume, self._call("GET", "/v1/sessions/%s/resume" % _seg(session_id)))

    def repair(self, session_id: str, *, expected_last_seq: Optional[int] = None) -> RepairResult:
        """Apply the automatic repairs resume suggests (idempotent)."""
        body: Dict[str, Any] = {}
        if expected_last_seq is not None:
            body["expected_last_seq"] = expected_last_seq
        return cast(
            RepairResult,
            self._call(
                "POST",
                "/v1/sessions/%s/repair" % _seg(session_id),
                json_body=body,
                idempotent=expected_last_seq is None,
            ),
        )

    # --- agents and memory ---------------------------------------------------

    def create_agent(
        self,
        name: str,
        *,
        id: Optional[str] = None,
        agent_type: Optional[str] = None,
        model: Optional[str] = None,
        system: Optional[str] = None,
        tool_ids: Optional[Sequence[str]] = None,
        tags: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
    ) -> Agent:
        aid = id or "agt_" + _uuid7_hex()
        body: Dict[str, Any] = {"id": aid, "name": name}
        for k, v in (
            ("agent_type", agent_type),
            ("model", model),
            ("system", system),
            ("tool_ids", list(tool_ids) if tool_ids is not None else None),
            ("tags", list(tags) if tags is not None else None),
            ("metadata", dict(metadata) if metadata is not None else None),
        ):
            if v is not None:
                body[k] = v

        def recover(p: Problem) -> Optional[Agent]:
            if p.code != "conflict":
                return None
            a = self.get_agent(aid)
            return a if a["name"] == name else None

        return cast(Agent, self._call("POST", "/v1/agents", json_body=body, recover=recover))

    def get_agent(self, id: str) -> Agent:
        return cast(Agent, self._call("GET", "/v1/agents/" + _seg(id)))

    def update_agent(self, id: str, **fields: Any) -> Agent:
        """``PATCH``: any of ``name``, ``agent_type``, ``model``, ``system``,
        ``tool_ids``, ``tags`` (replaced), ``metadata`` (merge patch)."""
        return cast(Agent, self._call("PATCH", "/v1/agents/" + _seg(id), json_body=fields, idempotent=True))

    def delete_agent(self, id: str) -> None:
        """Delete the agent with its blocks and passages (its sessions stay)."""
        self._call("DELETE", "/v1/agents/" + _seg(id), idempotent=True, recover=_gone)

    def list_agents(
        self,
        *,
        name: Optional[str] = None,
        tag: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[Agent]:
        return self._pager("/v1/agents", {"name": name, "tag": tag, "limit": limit}, cursor)

    def list_blocks(self, agent_id: str) -> List[Block]:
        return cast(List[Block], self._call("GET", "/v1/agents/%s/blocks" % _seg(agent_id))["data"])

    def get_block(self, agent_id: str, label: str) -> Block:
        return cast(Block, self._call("GET", "/v1/agents/%s/blocks/%s" % (_seg(agent_id), _seg(label))))

    def put_block(
        self,
        agent_id: str,
        label: str,
        value: str = "",
        *,
        limit: Optional[int] = None,
        description: Optional[str] = None,
        read_only: Optional[bool] = None,
        if_match: Union[int, str, None] = None,
    ) -> Block:
        """Replace (or create) a block. ``if_match`` (the block's ``version``,
        or its ETag) writes only if nobody changed it since (``412
        precondition_failed`` otherwise)."""
        body: Dict[str, Any] = {"value": value}
        if limit is not None:
            body["limit"] = limit
        if description is not None:
            body["description"] = description
        if read_only is not None:
            body["read_only"] = read_only
        headers = None
        if if_match is not None:
            headers = {"If-Match": '"%d"' % if_match if isinstance(if_match, int) else str(if_match)}
        path = "/v1/agents/%s/blocks/%s" % (_seg(agent_id), _seg(label))

        def recover(p: Problem) -> Optional[Block]:
            if p.code != "precondition_failed":
                return None
            b = self.get_block(agent_id, label)
            return b if b["value"] == value else None

        return cast(
            Block,
            self._call(
                "PUT",
                path,
                json_body=body,
                headers=headers,
                idempotent=if_match is None,
                recover=recover if if_match is not None else None,
            ),
        )

    def delete_block(self, agent_id: str, label: str) -> None:
        self._call(
            "DELETE",
            "/v1/agents/%s/blocks/%s" % (_seg(agent_id), _seg(label)),
            idempotent=True,
            recover=_gone,
        )

    def attach_block(self, agent_id: str, owner_agent_id: str, label: str, *, as_label: Optional[str] = None) -> Block:
        """Share agent ``owner_agent_id``'s block ``label`` with ``agent_id``,
        under ``as_label`` (the same label by default): one block, one version
        and history, read and written through either agent."""
        body: Dict[str, Any] = {"agent_id": owner_agent_id, "label": label}
        if as_label is not None:
            body["as"] = as_label

        def recover(p: Problem) -> Optional[Block]:
            # A resend after a lost answer finds the label taken by this very attachment.
            if p.code != "block_exists":
                return None
            b = self.get_block(agent_id, as_label or label)
            return b if (b["owner_agent_id"], b["owner_label"]) == (owner_agent_id, label) else None

        return cast(
            Block,
            self._call("POST", "/v1/agents/%s/blocks/attach" % _seg(agent_id), json_body=body, recover=recover),
        )

    def detach_block(self, agent_id: str, label: str) -> None:
        """Remove the attachment ``label`` of ``agent_id``; the owner's block stays."""
        self._call(
            "POST",
            "/v1/agents/%s/blocks/%s/detach" % (_seg(agent_id), _seg(label)),
            recover=_gone,
        )

    def append_block(self, agent_id: str, label: str, content: str) -> Block:
        """Add ``content`` on a new line (creating the block if missing), atomically."""
        return cast(
            Block,
            self._call(
                "POST",
                "/v1/agents/%s/blocks/%s/append" % (_seg(agent_id), _seg(label)),
                json_body={"content": content},
            ),
        )

    def replace_block(self, agent_id: str, label: str, old: str, new: str = "") -> Block:
        """Replace every occurrence of ``old`` (``422 old_not_found`` if none)."""
        return cast(
            Block,
            self._call(
                "POST",
                "/v1/agents/%s/blocks/%s/replace" % (_seg(agent_id), _seg(label)),
                json_body={"old": old, "new": new},
            ),
        )

    def block_history(
        self, agent_id: str, label: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Pager[Block]:
        """Every version of the block, newest first."""
        return self._pager("/v1/agents/%s/blocks/%s/history" % (_seg(agent_id), _seg(label)), {"limit": limit}, cursor)

    def insert_passage(
        self,
        agent_id: str,
        content: str,
        *,
        tags: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
    ) -> Passage:
        body: Dict[str, Any] = {"content": content}
        if tags is not None:
            body["tags"] = list(tags)
        if metadata is not None:
            body["metadata"] = dict(metadata)
        return cast(Passage, self._call("POST", "/v1/agents/%s/archival" % _seg(agent_id), json_body=body))

    def get_passage(self, agent_id: str, passage_id: str) -> Passage:
        return cast(Passage, self._call("GET", "/v1/agents/%s/archival/%s" % (_seg(agent_id), _seg(passage_id))))

    def delete_passage(self, agent_id: str, passage_id: str) -> None:
        self._call(
            "DELETE",
            "/v1/agents/%s/archival/%s" % (_seg(agent_id), _seg(passage_id)),
            idempotent=True,
            recover=_gone,
        )

    def list_passages(
        self, agent_id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Pager[Passage]:
        return self._pager("/v1/agents/%s/archival" % _seg(agent_id), {"limit": limit}, cursor)

    def search_archival(
        self,
        agent_id: str,
        q: str,
        *,
        tags: Optional[Sequence[str]] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> PassageSearchResult:
        query = {"q": q, "tags": list(tags) if tags else None, "after": after, "before": before, "limit": limit}
        return cast(PassageSearchResult, self._call("GET", "/v1/agents/%s/archival/search" % _seg(agent_id), query=query))

    def list_tools(self) -> List[ToolDef]:
        """Letta's memory tools with their JSON Schemas, for a model."""
        return cast(List[ToolDef], self._call("GET", "/v1/tools")["data"])

    def call_tool(self, agent_id: str, name: str, arguments: Union[str, Mapping[str, JSON]]) -> ToolResult:
        """Run a memory tool with the model's arguments (its JSON text, or the
        parsed object); give the model ``result["result"]``."""
        body = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        read_only = name in ("archival_memory_search", "conversation_search")
        return cast(
            ToolResult,
            self._call(
                "POST",
                "/v1/agents/%s/tools/%s" % (_seg(agent_id), _seg(name)),
                json_body=body,
                idempotent=read_only,
            ),
        )

    # --- files ---------------------------------------------------------------

    def upload_file(self, data: bytes, media_type: str) -> File:
        """Store bytes for ``image`` and ``file`` parts (``file_id``). The same
        bytes and media type are the same file, so a resend is safe."""
        return cast(File, self._call("POST", "/v1/files", data=bytes(data), content_type=media_type, idempotent=True))

    def download_file(self, file_id: str) -> bytes:
        resp, _ = self._request("GET", "/v1/files/" + _seg(file_id))
        return resp.body

    # --- admin ---------------------------------------------------------------

    def create_key(self, scope: Scope, *, name: Optional[str] = None, user_id: Optional[str] = None) -> NewAPIKey:
        """A new key of the caller's tenant (admin scope); ``key`` is shown this once.
        With ``user_id``, the key sees only that end user's sessions."""
        body: Dict[str, Any] = {"scope": scope}
        if name is not None:
            body["name"] = name
        if user_id is not None:
            body["user_id"] = user_id
        return cast(NewAPIKey, self._call("POST", "/v1/admin/keys", json_body=body))

    def list_keys(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Pager[APIKey]:
        return self._pager("/v1/admin/keys", {"limit": limit}, cursor)

    def revoke_key(self, key_id: str) -> None:
        self._call("DELETE", "/v1/admin/keys/" + _seg(key_id), idempotent=True)

    # --- export --------------------------------------------------------------

    def export_session(self, id: str) -> Iterator[Dict[str, JSON]]:
        """The session's NDJSON export, a parsed line at a time."""
        resp = self.stream("GET", "/v1/sessions/%s/export" % _seg(id))
        with resp:
            for line in resp:
                if line.strip():
                    yield json.loads(line)

    # --- the live event feed -------------------------------------------------

    def events(
        self,
        session_id: str,
        *,
        after: Optional[int] = None,
        after_seq: Optional[int] = None,
        types: Union[EventType, str, Sequence[str], None] = None,
        max_events: Optional[int] = None,
        idle_timeout: Optional[float] = None,
        read_timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
    ) -> EventStream:
        """Follow a session live (``GET /v1/sessions/{id}/events``): an
        :class:`~logbook.events.EventStream` of :class:`~logbook.events.Event`
        (``id``, ``type``, ``data``), each once, in commit order, reconnecting
        with ``Last-Event-ID`` when the connection drops.

        Where it starts: ``after_seq=N`` after the event that appended message
        ``N`` (``0``: from the session's first event; ``409 event_not_found``
        for a message that was imported or forked in); ``after=ID`` after the
        event ``ID`` (a ``last_id`` from before); neither: from now (the
        stream connects before this returns). ``types`` keeps only events of
        these types (``"message.appended"``, …).

        When it stops: :meth:`~logbook.events.EventStream.close` (or leaving
        a ``with`` block), after ``max_events`` events, or when no event came
        for ``idle_timeout`` seconds. ``read_timeout`` (default 45) is how long
        a silent connection is trusted (the server sends a heartbeat every
        15 s); ``max_retries`` (default: the client's) how many failed
        connections in a row are retried before one is raised."""
        return session_events(
            self,
            session_id,
            after=after,
            after_seq=after_seq,
            types=types,
            max_events=max_events,
            idle_timeout=idle_timeout,
            read_timeout=read_timeout,
            max_retries=max_retries,
        )

    def tenant_events(
        self,
        *,
        session_id: Optional[str] = None,
        after: Optional[int] = None,
        types: Union[EventType, str, Sequence[str], None] = None,
        max_events: Optional[int] = None,
        idle_timeout: Optional[float] = None,
        read_timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
    ) -> EventStream:
        """Follow the whole tenant of the API key live (``GET /v1/events``),
        for dashboards: as :meth:`events`, filtered by ``session_id`` and
        ``types``; it starts from now, or after the event ``after``."""
        return tenant_events(
            self,
            session_id=session_id,
            after=after,
            types=types,
            max_events=max_events,
            idle_timeout=idle_timeout,
            read_timeout=read_timeout,
            max_retries=max_retries,
        )


class _Recovered(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _gone(p: Problem) -> Optional[Dict[str, Any]]:
    """A resent DELETE that finds nothing: the first attempt deleted it."""
    return {} if p.code == "not_found" else None
