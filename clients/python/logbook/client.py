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

from .errors import JobInterrupted, LogbookError, Problem, TransportError
from .events import EventStream, EventType, session_events, tenant_events
from .pagination import Pager, _page
from .stream import LineResult, StreamWriter
from .stream import append_many as _append_many
from .types import (
    JSON,
    Agent,
    APIKey,
    Backup,
    Block,
    Checkpoint,
    CheckpointRetention,
    Compaction,
    Content,
    EmbeddingConfig,
    File,
    Health,
    Identity,
    IntegrityReport,
    Item,
    Job,
    ItemPage,
    ItemResult,
    ItemsImportResult,
    Message,
    MessageEmbedding,
    MessageInput,
    MessageSearchResult,
    NamespacePage,
    NewAPIKey,
    Page,
    Passage,
    PassageSearchMode,
    PassageSearchResult,
    PurgeResult,
    RepairResult,
    Resume,
    RetentionPolicy,
    RewindResult,
    Role,
    Scope,
    Session,
    SessionContext,
    SessionStatus,
    TenantEmbedding,
    ToolDef,
    ToolResult,
    Usage,
)

__all__ = ["Client", "Response", "AppendResult", "DEFAULT_URL", "new_idempotency_key"]

log = logging.getLogger("logbook")

DEFAULT_URL = "http://127.0.0.1:8080"
_USER_AGENT = "logbook-python/0.1"

_JOB_POLL_MAX = 1.0
"""The longest wait, in seconds, between two reads of a running job."""


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Default of the optional fields of updates: the field is not sent (kept as is)."""


def new_idempotency_key() -> str:
    """A fresh key for one logical write (random; 36 characters)."""
    return "lbpy-" + os.urandom(16).hex()[:31]


def _keyed(method: str, path: str) -> bool:
    """Whether a request gets an ``Idempotency-Key`` of its own when it has
    none: every ``POST``, and a checkpoint's ``PUT`` and ``PATCH``."""
    m = method.upper()
    return m == "POST" or (m in ("PUT", "PATCH") and path.endswith("/checkpoint"))


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
        """``True`` when a write was answered from an earlier identical request
        under the same ``Idempotency-Key`` (``Idempotent-Replayed: true``) and
        nothing was written."""
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
    connection fails, and on ``409 idempotency_in_progress`` (the same key's
    first attempt is still being served). Any other 4xx or 5xx is raised at
    once as a :class:`Problem`. A write is only resent after a connection
    failure when the resend is safe: every ``POST``, and a checkpoint's ``PUT``
    and ``PATCH``, carries an ``Idempotency-Key`` (made per logical write unless
    you give one), the same on its resends, so the server applies it once and
    answers the retry with the first attempt's answer
    (:attr:`Response.replayed`); should the server have lost that answer, the
    retry raises :class:`Problem` ``idempotency_applied`` (read the resource
    back). Other writes are resent only when idempotent by themselves (``PUT``,
    ``DELETE``); otherwise they raise :class:`TransportError` with
    ``maybe_applied=True``.

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
        safe; by default, for ``GET``, ``HEAD``, ``PUT`` and ``DELETE``, and for
        every request that carries an ``Idempotency-Key`` (every ``POST`` gets
        one)."""
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
        if _keyed(method, path) and not h.get("Idempotency-Key"):
            h["Idempotency-Key"] = new_idempotency_key()
        key = h.get("Idempotency-Key")
        if key:
            idempotent = True
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
                if (resp.status in (429, 503) or problem.code == "idempotency_in_progress") and attempt < self.max_retries:
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

    def get_health(self) -> Health:
        """``GET /healthz``: the process is up (with its version)."""
        return cast(Health, self._call("GET", "/healthz"))

    def get_readiness(self) -> Health:
        """``GET /readyz``: the database answers."""
        return cast(Health, self._call("GET", "/readyz"))

    def get_who_am_i(self) -> Identity:
        """The caller's own identity (``GET /v1/whoami``): its key's tenant,
        scope, id and the end user it is bound to (``open_mode`` with no key),
        to offer only what the key may do."""
        return cast(Identity, self._call("GET", "/v1/whoami"))

    # The names before the clients' methods were named alike (clients/PARITY.md).
    healthz = get_health
    readyz = get_readiness

    # --- sessions ------------------------------------------------------------

    def create_session(
        self,
        id: Optional[str] = None,
        *,
        agent_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
        user_id: Optional[str] = None,
        expires_at: Optional[str] = None,
    ) -> Session:
        """Create a session (status ``created``). Without ``id`` the client makes
        one like the server's (``ses_`` + a UUIDv7), so that a resend after a
        connection failure cannot make a second session. A taken ``id`` is a
        ``409 conflict``. ``user_id`` is the end user it belongs to (a key bound
        to a user may give only its own); ``expires_at`` (RFC 3339) when the
        server may erase it."""
        sid = id or "ses_" + _uuid7_hex()
        body: Dict[str, Any] = {"id": sid}
        if agent_id is not None:
            body["agent_id"] = agent_id
        if user_id is not None:
            body["user_id"] = user_id
        if expires_at is not None:
            body["expires_at"] = expires_at
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
                and s.get("user_id") == user_id
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
        expires_at: Optional[str] = UNSET,
    ) -> Session:
        """``PATCH``: a new ``status`` (``invalid_transition`` if not allowed),
        ``title`` (``None`` clears it), ``metadata`` as an RFC 7396 merge patch
        (a ``None`` value removes a key), ``expires_at`` (``None``: never).
        Fields left out are kept."""
        body: Dict[str, Any] = {}
        if status is not None:
            body["status"] = status
        if title is not UNSET:
            body["title"] = title
        if metadata is not UNSET:
            body["metadata"] = None if metadata is None else dict(metadata)
        if expires_at is not UNSET:
            body["expires_at"] = expires_at
        return cast(Session, self._call("PATCH", "/v1/sessions/" + _seg(id), json_body=body, idempotent=True))

    def purge_session(self, id: str) -> None:
        """Erases the session for good (``DELETE ?purge=true``; a write key
        that can see it may): messages, checkpoints, pending writes."""
        self._request("DELETE", "/v1/sessions/" + _seg(id), query={"purge": "true"}, idempotent=True)

    def close_session(self, id: str) -> Session:
        """Soft close (``DELETE``): status ``completed``; nothing is deleted."""
        return cast(Session, self._call("DELETE", "/v1/sessions/" + _seg(id), idempotent=True))

    def list_sessions(
        self,
        *,
        status: Optional[SessionStatus] = None,
        agent_id: Optional[str] = None,
        user_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        created_after: Optional[str] = None,
        created_before: Optional[str] = None,
        due_before: Optional[str] = None,
        order: Optional[str] = None,
        count: bool = False,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[Session]:
        """Sessions, newest first (``order="asc"``: oldest first); ``title``
        keeps those whose title contains it. ``metadata={"channel": "web"}``
        filters on ``metadata.channel=web`` (values compare as their text).
        ``count=True`` adds the matching total to each page (``total``: ``count``,
        and ``exact`` false when the server stopped counting at its maximum).
        ``limit`` is the page size (1-200), not a total: the pager fetches
        every page."""
        q: Dict[str, Any] = {
            "status": status,
            "title": title,
            "order": order,
            "count": True if count else None,
            "agent_id": agent_id,
            "user_id": user_id,
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
        session_id: str,
        *,
        id: Optional[str] = None,
        at_seq: Optional[int] = None,
        at_checkpoint: Optional[Mapping[str, Any]] = None,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
    ) -> Session:
        """A new session sharing the first ``at_seq`` messages (default: all) of
        ``session_id``, or, with ``at_checkpoint={"client_id": …}`` (or
        ``"iteration"``, and a ``"namespace"``), those up to that checkpoint,
        starting from a copy of it. ``id`` names the fork (as the TypeScript
        client's ``forkSession(id, {id})`` and the API's ``id`` do); left out,
        the client picks one (``ses_`` + a UUIDv7), so a resend cannot make
        two."""
        parent = session_id
        fid = id or "ses_" + _uuid7_hex()
        body: Dict[str, Any] = {"id": fid}
        if at_seq is not None:
            body["at_seq"] = at_seq
        if at_checkpoint is not None:
            body["at_checkpoint"] = dict(at_checkpoint)
        if title is not None:
            body["title"] = title
        if metadata is not None:
            body["metadata"] = dict(metadata)

        def recover(p: Problem) -> Optional[Session]:
            if p.code != "conflict":
                return None
            s = self.get_session(fid)
            return s if s["parent_id"] == parent else None

        return cast(Session, self._call("POST", "/v1/sessions/%s/fork" % _seg(parent), json_body=body, recover=recover))

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

    def append_many(
        self,
        session_id: str,
        messages: Iterable[Union[MessageInput, Mapping[str, Any]]],
        *,
        window: int = 256,
        window_bytes: int = 8 << 20,
        key_prefix: Optional[str] = None,
        request_age: float = 20.0,
        mode: Optional[str] = None,
    ) -> List[LineResult]:
        """Append ``messages`` in order on one stream (NDJSON on one request,
        each answered as it commits) and answer each one's
        :class:`~logbook.stream.LineResult`, in order. Not all or nothing,
        unlike :meth:`append_messages`: raises the first message the server
        refused as a :class:`~logbook.stream.LineError`, those before it stored
        and those after it not (``stream_stopped``); its ``results`` holds
        every message's result. A broken connection is retried from the first
        message not answered, each message keyed so that it is stored once.
        The options are :meth:`open_stream`'s."""
        w = self.open_stream(
            session_id, window=window, window_bytes=window_bytes, key_prefix=key_prefix, request_age=request_age, mode=mode
        )
        return _append_many(w, messages)

    def open_stream(
        self,
        session_id: str,
        *,
        window: int = 256,
        window_bytes: int = 8 << 20,
        key_prefix: Optional[str] = None,
        request_age: float = 20.0,
        mode: Optional[str] = None,
    ) -> StreamWriter:
        """A :class:`~logbook.stream.StreamWriter` that sends messages to a
        session as they come, many in flight on one request, with
        ``results()`` in order.

        ``window``: the messages sent and not yet answered (and, once
        ``results()`` is called, not yet read) before ``send`` blocks;
        ``window_bytes`` the same by size (a larger message goes alone).
        ``key_prefix`` names the messages that carry no ``idempotency_key``
        (message n gets ``key_prefix + str(n)``; default random): pass one
        derived from your load or turn to make a resend after your process
        crashed safe too. ``request_age``: seconds one request carries new
        messages before the writer goes on with a new one (the server cuts a
        stream that, after 30 s, arrives slower than 64 KiB/s). ``mode``:
        ``"stream"`` sends the body while it reads the answer (two threads on
        one socket; the default for ``http://``, and only there), ``"batch"``
        sends one request per batch of the messages waiting, each answered in
        full before the next (the default for ``https://``, whose sockets are
        not safe to read and write from two threads at once). The writer connects to
        ``base_url`` itself (``http.client``), not through ``opener``."""
        return StreamWriter(
            self,
            session_id,
            window=window,
            window_bytes=window_bytes,
            key_prefix=key_prefix,
            request_age=request_age,
            mode=mode,
        )

    def get_message(self, session_id: str, message_id: str) -> Message:
        return cast(Message, self._call("GET", "/v1/sessions/%s/messages/%s" % (_seg(session_id), _seg(message_id))))

    def get_message_by_client_id(self, session_id: str, client_id: str) -> Message:
        """The message of the session's history whose ``client_id`` is this
        (``Problem`` ``not_found`` when none)."""
        path = "/v1/sessions/%s/messages-by-client-id/%s" % (_seg(session_id), _seg(client_id))
        return cast(Message, self._call("GET", path))

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
        to_seq: Optional[int] = None,
        *,
        to_client_id: Optional[str] = None,
        from_client_id: Optional[str] = None,
        expected_last_seq: Optional[int] = None,
        messages: Optional[Sequence[Union[MessageInput, Mapping[str, Any]]]] = None,
        idempotency_key: Optional[str] = None,
    ) -> RewindResult:
        """Drop the messages after ``to_seq`` (``0`` clears the session), or
        after the message whose client id is ``to_client_id``, or from the one
        whose client id is ``from_client_id`` (give one of the three), and
        append ``messages`` as the new tail in the same transaction.
        ``expected_last_seq`` fences it (``409 stale_seq`` if another write came
        first). A closed session is ``409 session_closed``.

        Fenced or not, it is resent after a connection failure under its
        ``Idempotency-Key`` (``idempotency_key``, or one made for this call): a
        resend whose first attempt was applied gets that attempt's answer,
        never ``stale_seq``."""
        body: Dict[str, Any] = {}
        if to_seq is not None:
            body["to_seq"] = to_seq
        if to_client_id is not None:
            body["to_client_id"] = to_client_id
        if from_client_id is not None:
            body["from_client_id"] = from_client_id
        if expected_last_seq is not None:
            body["expected_last_seq"] = expected_last_seq
        if messages:
            body["messages"] = [dict(m) for m in messages]
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return cast(
            RewindResult,
            self._call(
                "POST",
                "/v1/sessions/%s/rewind" % _seg(session_id),
                json_body=body,
                headers=headers,
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
        mode: Optional[PassageSearchMode] = None,
        query_embedding: Optional[Sequence[float]] = None,
    ) -> MessageSearchResult:
        """Search over the tenant's messages (or one agent's), best first: by
        words (``mode="keyword"``, the default), by meaning (``"vector"``) or
        both (``"hybrid"``), with ``query_embedding`` your embedding of ``q``
        (left out, the server embeds ``q``). ``index_lag`` in the answer says
        how many messages are not searchable yet; ``partial`` that some words
        were too common to rank over every message."""
        path = "/v1/messages/search" if agent_id is None else "/v1/agents/%s/messages/search" % _seg(agent_id)
        roles = [role] if isinstance(role, str) else role
        query = {
            "q": q,
            "mode": mode,
            "query_embedding": _floats(query_embedding),
            "role": roles,
            "session_id": session_id,
            "after": after,
            "before": before,
            "limit": limit,
        }
        return cast(MessageSearchResult, self._call("GET", path, query=query))

    def search_agent_messages(
        self,
        agent_id: str,
        q: str,
        *,
        role: Union[Role, Sequence[Role], None] = None,
        session_id: Optional[str] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        limit: Optional[int] = None,
        mode: Optional[PassageSearchMode] = None,
        query_embedding: Optional[Sequence[float]] = None,
    ) -> MessageSearchResult:
        """:meth:`search_messages` over the messages of an agent's sessions and
        those carrying its ``agent_id``."""
        return self.search_messages(
            q,
            agent_id=agent_id,
            role=role,
            session_id=session_id,
            after=after,
            before=before,
            limit=limit,
            mode=mode,
            query_embedding=query_embedding,
        )

    def get_message_embedding(self, session_id: str, message_id: str) -> MessageEmbedding:
        """The message's embedding (yours, or the server's), with its model."""
        path = "/v1/sessions/%s/messages/%s/embedding" % (_seg(session_id), _seg(message_id))
        return cast(MessageEmbedding, self._call("GET", path))

    def put_message_embedding(
        self, session_id: str, message_id: str, embedding: Sequence[float], embedding_model: str
    ) -> MessageEmbedding:
        """Stores your embedding of a message, ready for search by meaning at once."""
        path = "/v1/sessions/%s/messages/%s/embedding" % (_seg(session_id), _seg(message_id))
        body = {"embedding": [float(x) for x in embedding], "embedding_model": embedding_model}
        return cast(MessageEmbedding, self._call("PUT", path, json_body=body))

    def get_context(
        self,
        session_id: str,
        *,
        max_tokens: Optional[int] = None,
        include: Optional[str] = None,
        include_blocks: bool = False,
    ) -> SessionContext:
        """What the next LLM call needs: the latest compaction, system and
        developer messages, and the newest messages that fit ``max_tokens``;
        with ``include="blocks"`` (or ``include_blocks=True``) the agent's
        memory blocks too."""
        q = {"max_tokens": max_tokens, "include": include or ("blocks" if include_blocks else None)}
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
        expected_last_seq: Optional[int] = None,
        messages: Optional[Sequence[Union[MessageInput, Mapping[str, Any]]]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Compaction:
        """Record that ``summary`` stands for messages 1..``through_seq``; with
        ``messages``, append them after it in the same write (the answer lists
        them in ``messages``), fenced by ``expected_last_seq``."""
        body: Dict[str, Any] = {"through_seq": through_seq, "summary": summary}
        if tokens is not None:
            body["tokens"] = tokens
        if model is not None:
            body["model"] = model
        if provider_item is not None:
            body["provider_item"] = dict(provider_item)
        if expected_last_seq is not None:
            body["expected_last_seq"] = expected_last_seq
        if messages:
            body["messages"] = [dict(m) for m in messages]
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None

        def recover(p: Problem) -> Optional[Compaction]:
            if p.status != 422:
                return None
            latest = self.list_compactions(session_id, limit=1).first_page()["data"]
            if latest and latest[0]["through_seq"] == through_seq and latest[0]["summary"] == _canon(summary):
                return cast(Compaction, latest[0])
            return None

        return cast(
            Compaction,
            self._call(
                "POST", "/v1/sessions/%s/compactions" % _seg(session_id), json_body=body, headers=headers, recover=recover
            ),
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
        namespace: Optional[str] = None,
        client_id: Optional[str] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
    ) -> Checkpoint:
        """Write the loop state of ``iteration``, which must be above the latest;
        with ``expected_iteration`` (the iteration you last saw, 0 for none) a
        second worker's write fails with ``409 stale_iteration``
        (``problem.latest_iteration``)."""
        body: Dict[str, Any] = {"iteration": iteration, "state": dict(state)}
        if expected_iteration is not None:
            body["expected_iteration"] = expected_iteration
        _put_checkpoint_fields(body, namespace, client_id, metadata)

        def recover(p: Problem) -> Optional[Checkpoint]:
            # A resend lost to the first attempt if that one wrote this very state
            # (and the server lost the answer the key would have replayed).
            if p.code != "idempotency_applied" and (p.code != "stale_iteration" or p.latest_iteration != iteration):
                return None
            c = self.get_checkpoint(session_id, iteration, namespace=namespace)
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
        namespace: Optional[str] = None,
        client_id: Optional[str] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
    ) -> Checkpoint:
        """Write ``iteration`` as the latest state with ``state_patch`` (an RFC
        7396 merge patch) applied; the same fence as :meth:`put_checkpoint`.
        ``409 no_checkpoint`` when there is none to patch yet."""
        body: Dict[str, Any] = {"iteration": iteration, "state_patch": dict(state_patch)}
        if expected_iteration is not None:
            body["expected_iteration"] = expected_iteration
        _put_checkpoint_fields(body, namespace, client_id, metadata)

        def recover(p: Problem) -> Optional[Checkpoint]:
            if p.code != "idempotency_applied" and (p.code != "stale_iteration" or p.latest_iteration != iteration):
                return None
            c = self.get_checkpoint(session_id, iteration, namespace=namespace)
            return c if _patch_applied(c["state"], state_patch) else None

        return cast(
            Checkpoint,
            self._call("PATCH", "/v1/sessions/%s/checkpoint" % _seg(session_id), json_body=body, recover=recover),
        )

    def get_checkpoint(
        self,
        session_id: str,
        iteration: Optional[int] = None,
        *,
        namespace: Optional[str] = None,
        parent_writes: bool = False,
    ) -> Checkpoint:
        """The latest checkpoint, or that of ``iteration`` (``404`` when none),
        of ``namespace`` (the root one by default); ``parent_writes`` adds the
        pending writes of its parent."""
        path = "/v1/sessions/%s/checkpoint" % _seg(session_id)
        if iteration is not None:
            path = "/v1/sessions/%s/checkpoints/%d" % (_seg(session_id), iteration)
        q = {"namespace": namespace or None, "parent_writes": True if parent_writes else None}
        return cast(Checkpoint, self._call("GET", path, query=q))

    def list_checkpoints(
        self,
        session_id: str,
        *,
        namespace: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        before: Optional[str] = None,
        before_namespace: Optional[str] = None,
        values: bool = True,
        parent_writes: bool = False,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[Checkpoint]:
        """Newest first, every namespace unless ``namespace`` is given; only
        those whose metadata has these values (compared as text), written
        before the checkpoint ``before`` names. ``values=False`` leaves states
        and pending writes out; ``parent_writes`` adds those of each one's parent."""
        q = _checkpoint_query(namespace, metadata, before, before_namespace, values, limit)
        q["parent_writes"] = True if parent_writes else None
        return self._pager("/v1/sessions/%s/checkpoints" % _seg(session_id), q, cursor)

    def list_all_checkpoints(
        self,
        *,
        session_id: Optional[str] = None,
        namespace: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        before: Optional[str] = None,
        before_session: Optional[str] = None,
        before_namespace: Optional[str] = None,
        values: bool = True,
        parent_writes: bool = False,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[Checkpoint]:
        """Checkpoints across the tenant's sessions, newest first, filtered as
        :meth:`list_checkpoints` filters."""
        q = _checkpoint_query(namespace, metadata, before, before_namespace, values, limit)
        q["session_id"] = session_id
        q["before_session"] = before_session
        q["parent_writes"] = True if parent_writes else None
        return self._pager("/v1/checkpoints", q, cursor)

    def find_checkpoint(
        self, session_id: str, *, namespace: str = "", client_id: Optional[str] = None, parent_writes: bool = False
    ) -> Checkpoint:
        """The latest checkpoint of ``namespace``, or the one ``client_id``
        names, with its pending writes (``404`` when none); ``parent_writes``
        adds its parent's."""
        q = {"namespace": namespace or None, "client_id": client_id, "parent_writes": True if parent_writes else None}
        return cast(Checkpoint, self._call("GET", "/v1/sessions/%s/checkpoint" % _seg(session_id), query=q))

    def create_checkpoint(
        self,
        session_id: str,
        *,
        state: Optional[Mapping[str, JSON]] = None,
        state_patch: Optional[Mapping[str, JSON]] = None,
        client_id: Optional[str] = None,
        parent_id: Optional[str] = None,
        namespace: str = "",
        metadata: Optional[Mapping[str, JSON]] = None,
        expected_iteration: Optional[int] = None,
        create_session: bool = False,
    ) -> Checkpoint:
        """A graph runtime's write: the next checkpoint of ``namespace``,
        numbered by the server, named ``client_id`` and hung under
        ``parent_id``; ``state`` whole or ``state_patch`` (a merge patch of the
        parent's). The answer leaves the state out. With a ``client_id`` a
        resend is safe: the same checkpoint again answers the stored one."""
        body: Dict[str, Any] = {"namespace": namespace, "create_session": create_session}
        for k, v in (("state", state), ("state_patch", state_patch), ("client_id", client_id), ("parent_id", parent_id),
                     ("metadata", metadata), ("expected_iteration", expected_iteration)):
            if v is not None:
                body[k] = dict(v) if isinstance(v, Mapping) else v
        return cast(
            Checkpoint,
            self._call(
                "POST",
                "/v1/sessions/%s/checkpoints" % _seg(session_id),
                json_body=body,
                idempotent=client_id is not None and expected_iteration is None,
            ),
        )

    def put_checkpoint_writes(
        self,
        session_id: str,
        checkpoint_id: str,
        task_id: str,
        writes: Sequence["tuple[str, JSON]"],
        *,
        namespace: str = "",
        task_path: str = "",
        create_session: bool = False,
    ) -> None:
        """Records one task's ``(channel, value)`` writes against a checkpoint
        (which need not exist yet). A resend is safe: the first write at an
        index wins (a special channel's last)."""
        body = {
            "namespace": namespace,
            "checkpoint_id": checkpoint_id,
            "task_id": task_id,
            "task_path": task_path,
            "writes": [{"channel": c, "value": v} for c, v in writes],
            "create_session": create_session,
        }
        self._request("POST", "/v1/sessions/%s/checkpoint-writes" % _seg(session_id), json_body=body, idempotent=True)

    def get_checkpoint_retention(self, session_id: str) -> CheckpointRetention:
        """The session's retention policy: its own, or the server's default."""
        path = "/v1/sessions/%s/checkpoint-retention" % _seg(session_id)
        return cast(CheckpointRetention, self._call("GET", path))

    def set_checkpoint_retention(
        self, session_id: str, policy: Optional[RetentionPolicy]
    ) -> CheckpointRetention:
        """Sets the session's own policy; ``None`` returns it to the default."""
        path = "/v1/sessions/%s/checkpoint-retention" % _seg(session_id)
        if policy is None:
            return cast(CheckpointRetention, self._call("DELETE", path))
        return cast(CheckpointRetention, self._call("PUT", path, json_body=dict(policy)))

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
        embedding: Optional[EmbeddingConfig] = None,
    ) -> Agent:
        """A new agent; ``embedding`` names the endpoint that embeds its
        archival passages and messages (``url``, ``model``, …) when the
        tenant's is not the one to use."""
        aid = id or "agt_" + _uuid7_hex()
        body: Dict[str, Any] = {"id": aid, "name": name}
        for k, v in (
            ("agent_type", agent_type),
            ("model", model),
            ("system", system),
            ("tool_ids", list(tool_ids) if tool_ids is not None else None),
            ("tags", list(tags) if tags is not None else None),
            ("metadata", dict(metadata) if metadata is not None else None),
            ("embedding", dict(embedding) if embedding is not None else None),
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

    def export_agent(self, id: str) -> bytes:
        """The agent's export (NDJSON: the agent, its blocks, passages and
        sessions), as bytes to keep as they are: :meth:`import_agent` checks them."""
        resp, _ = self._request("GET", "/v1/agents/%s/export" % _seg(id))
        return resp.body

    def import_agent(self, data: bytes, *, as_new: bool = False) -> Agent:
        """Restores an agent from its export's bytes, all or nothing
        (``as_new``: the agent and its sessions under new ids)."""
        return cast(
            Agent,
            self._call(
                "POST",
                "/v1/agents/import",
                query={"as_new": True if as_new else None},
                data=bytes(data),
                content_type="application/x-ndjson",
            ),
        )

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

    def get_block_history(
        self, agent_id: str, label: str, *, limit: Optional[int] = None, cursor: Optional[str] = None
    ) -> Pager[Block]:
        """Every version of the block, newest first."""
        return self._pager("/v1/agents/%s/blocks/%s/history" % (_seg(agent_id), _seg(label)), {"limit": limit}, cursor)

    block_history = get_block_history

    def insert_passage(
        self,
        agent_id: str,
        content: str,
        *,
        tags: Optional[Sequence[str]] = None,
        metadata: Optional[Mapping[str, JSON]] = None,
        embedding: Optional[Sequence[float]] = None,
        embedding_model: Optional[str] = None,
        expires_at: Optional[str] = None,
    ) -> Passage:
        """Writes a passage to the agent's archival memory. With ``embedding``
        (your vector of ``content``, and its ``embedding_model``) it is
        searchable by meaning at once; without, the server embeds it when an
        endpoint is configured. ``expires_at`` (RFC 3339): when it may go."""
        body: Dict[str, Any] = {"content": content}
        if tags is not None:
            body["tags"] = list(tags)
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if embedding is not None:
            body["embedding"] = [float(x) for x in embedding]
        if embedding_model is not None:
            body["embedding_model"] = embedding_model
        if expires_at is not None:
            body["expires_at"] = expires_at
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
        mode: Optional[PassageSearchMode] = None,
        query_embedding: Optional[Sequence[float]] = None,
    ) -> PassageSearchResult:
        """The agent's passages best matching ``q``: by words (``mode=
        "keyword"``), by meaning (``"vector"``) or both (``"hybrid"``); the
        server's default without ``mode``. ``query_embedding`` is your vector
        of ``q`` (left out, the server embeds ``q``); with one, the query is
        posted, since a long vector does not fit a URL."""
        path = "/v1/agents/%s/archival/search" % _seg(agent_id)
        if query_embedding:
            body: Dict[str, Any] = {"q": q, "query_embedding": [float(x) for x in query_embedding]}
            for k, v in (("mode", mode), ("tags", list(tags) if tags else None), ("after", after), ("before", before), ("limit", limit)):
                if v is not None:
                    body[k] = v
            return cast(PassageSearchResult, self._call("POST", path, json_body=body, idempotent=True))
        query = {"q": q, "mode": mode, "tags": list(tags) if tags else None, "after": after, "before": before, "limit": limit}
        return cast(PassageSearchResult, self._call("GET", path, query=query))

    def list_tools(self) -> List[ToolDef]:
        """Letta's memory tools with their JSON Schemas, for a model."""
        return cast(List[ToolDef], self._call("GET", "/v1/tools")["data"])

    def run_tool(self, agent_id: str, tool_name: str, arguments: Union[str, Mapping[str, JSON]]) -> ToolResult:
        """Run a memory tool with the model's arguments (its JSON text, or the
        parsed object); give the model ``result["result"]``."""
        body = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        return cast(
            ToolResult,
            self._call("POST", "/v1/agents/%s/tools/%s" % (_seg(agent_id), _seg(tool_name)), json_body=body),
        )

    call_tool = run_tool

    # --- the item store ------------------------------------------------------
    #
    # JSON objects under a namespace (a list of labels) and a key, found by key,
    # by filters on their values and by meaning. Each call acts on one space:
    # the tenant's shared items, or ``user_id``'s.

    @staticmethod
    def _item_path(namespace: Sequence[str], key: str) -> str:
        return "/v1/items/%s/%s" % (urllib.parse.quote(".".join(namespace), safe=""), urllib.parse.quote(key, safe=""))

    def get_item(
        self, namespace: Sequence[str], key: str, *, user_id: Optional[str] = None, refresh_ttl: bool = False
    ) -> Item:
        """One item; a missing (or expired) one raises :class:`Problem` ``not_found``."""
        query = {"user_id": user_id, "refresh_ttl": True if refresh_ttl else None}
        return cast(Item, self._call("GET", self._item_path(namespace, key), query=query))

    def put_item(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, JSON],
        *,
        index: Union[bool, Sequence[str], None] = None,
        ttl_seconds: Optional[int] = None,
        expires_at: Optional[str] = None,
        user_id: Optional[str] = None,
        if_version: Optional[int] = None,
        if_absent: bool = False,
    ) -> Item:
        """Create or replace an item's whole value. ``index`` (paths such as
        ``["text"]``, or ``False``) picks the texts embedded for search by
        meaning. ``if_version`` / ``if_absent`` fence the write (``412
        precondition_failed`` otherwise). Without a fence a resend is safe."""
        body: Dict[str, Any] = {"value": dict(value)}
        if index is not None:
            body["index"] = False if index is False else list(cast(Sequence[str], index))
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        if expires_at is not None:
            body["expires_at"] = expires_at
        headers: Dict[str, str] = {}
        if if_version is not None:
            headers["If-Match"] = '"%d"' % if_version
        if if_absent:
            headers["If-None-Match"] = "*"
        return cast(
            Item,
            self._call(
                "PUT",
                self._item_path(namespace, key),
                query={"user_id": user_id},
                json_body=body,
                headers=headers or None,
                idempotent=not headers,
            ),
        )

    def delete_item(
        self, namespace: Sequence[str], key: str, *, user_id: Optional[str] = None, if_version: Optional[int] = None
    ) -> None:
        """Delete an item; a missing one raises :class:`Problem` ``not_found``."""
        headers = {"If-Match": '"%d"' % if_version} if if_version is not None else None
        self._call("DELETE", self._item_path(namespace, key), query={"user_id": user_id}, headers=headers)

    def search_items(
        self,
        namespace_prefix: Sequence[str] = (),
        *,
        filter: Optional[Mapping[str, JSON]] = None,
        query: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        cursor: Optional[str] = None,
        refresh_ttl: bool = False,
        user_id: Optional[str] = None,
    ) -> ItemPage:
        """One page of the items under ``namespace_prefix`` that pass ``filter``
        (LangGraph's: ``{"field": value}`` or ``{"field": {"$gte": 3}}``),
        ranked by meaning when ``query`` is given."""
        body: Dict[str, Any] = {"namespace_prefix": list(namespace_prefix)}
        for k, v in (("filter", filter), ("query", query), ("limit", limit), ("offset", offset), ("cursor", cursor)):
            if v is not None:
                body[k] = dict(cast(Mapping[str, Any], v)) if k == "filter" else v
        if refresh_ttl:
            body["refresh_ttl"] = True
        return cast(
            ItemPage,
            self._call("POST", "/v1/items/search", query={"user_id": user_id}, json_body=body, idempotent=not refresh_ttl),
        )

    def list_item_namespaces(
        self,
        *,
        prefix: Sequence[str] = (),
        suffix: Sequence[str] = (),
        max_depth: Optional[int] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        user_id: Optional[str] = None,
    ) -> NamespacePage:
        """The namespaces of a space's items (``"*"`` in ``prefix`` or ``suffix`` matches any label)."""
        query = {
            "prefix": ".".join(prefix) or None,
            "suffix": ".".join(suffix) or None,
            "max_depth": max_depth,
            "limit": limit,
            "offset": offset,
            "user_id": user_id,
        }
        return cast(NamespacePage, self._call("GET", "/v1/items/namespaces", query=query))

    def item_batch(self, ops: Sequence[Mapping[str, JSON]], *, user_id: Optional[str] = None) -> List[ItemResult]:
        """Up to 100 operations (``{"op": "get" | "put" | "delete" | "search" |
        "list_namespaces", …}``) in one request, their results in order: the
        reads first, then the writes in one transaction, all or nothing."""
        reads = all(o.get("op") in ("get", "search", "list_namespaces") and not o.get("refresh_ttl") for o in ops)
        res = self._call(
            "POST", "/v1/items/batch", query={"user_id": user_id}, json_body={"ops": [dict(o) for o in ops]}, idempotent=reads
        )
        return cast(List[ItemResult], res["results"])

    def export_items(
        self, *, namespace_prefix: Sequence[str] = (), user_id: Optional[str] = None, all_users: bool = False
    ) -> Iterator[Dict[str, JSON]]:
        """The items export (NDJSON), a parsed line at a time."""
        query = {"namespace_prefix": ".".join(namespace_prefix) or None, "user_id": user_id, "all_users": True if all_users else None}
        resp = self.stream("GET", "/v1/items/export", query=query)
        with resp:
            for line in resp:
                if line.strip():
                    yield json.loads(line)

    def import_items(self, data: bytes, *, replace: bool = False) -> ItemsImportResult:
        """Loads an items export (:meth:`export_items_bytes`, or a file of
        it), all or nothing; ``replace`` overwrites items that exist."""
        return cast(
            ItemsImportResult,
            self._call(
                "POST",
                "/v1/items/import",
                query={"replace": True if replace else None},
                data=bytes(data),
                content_type="application/x-ndjson",
            ),
        )

    def export_items_bytes(
        self, *, namespace_prefix: Sequence[str] = (), user_id: Optional[str] = None, all_users: bool = False
    ) -> bytes:
        """The items export as the server wrote it, for :meth:`import_items`."""
        query = {"namespace_prefix": ".".join(namespace_prefix) or None, "user_id": user_id, "all_users": True if all_users else None}
        resp, _ = self._request("GET", "/v1/items/export", query=query)
        return resp.body

    # --- files ---------------------------------------------------------------

    def upload_file(self, data: bytes, media_type: str) -> File:
        """Store bytes for ``image`` and ``file`` parts (``file_id``). The same
        bytes and media type are the same file, so a resend is safe."""
        return cast(File, self._call("POST", "/v1/files", data=bytes(data), content_type=media_type, idempotent=True))

    def download_file(self, file_id: str) -> bytes:
        resp, _ = self._request("GET", "/v1/files/" + _seg(file_id))
        return resp.body

    # --- admin ---------------------------------------------------------------

    def create_api_key(self, scope: Scope, *, name: Optional[str] = None, user_id: Optional[str] = None) -> NewAPIKey:
        """A new key of the caller's tenant (admin scope); ``key`` is shown this once.
        With ``user_id``, the key sees only that end user's sessions. A resend
        after a lost answer makes no second key: it raises :class:`Problem`
        ``idempotency_applied`` (the secret is kept nowhere; list the keys and
        revoke the one made)."""
        body: Dict[str, Any] = {"scope": scope}
        if name is not None:
            body["name"] = name
        if user_id is not None:
            body["user_id"] = user_id
        return cast(NewAPIKey, self._call("POST", "/v1/admin/keys", json_body=body))

    def list_api_keys(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Pager[APIKey]:
        """The tenant's keys (never their secrets)."""
        return self._pager("/v1/admin/keys", {"limit": limit}, cursor)

    def revoke_api_key(self, key_id: str) -> None:
        self._call("DELETE", "/v1/admin/keys/" + _seg(key_id), idempotent=True)

    create_key = create_api_key
    list_keys = list_api_keys
    revoke_key = revoke_api_key

    def get_usage(
        self,
        *,
        group_by: Optional[str] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Usage:
        """Tokens and cost per ``group_by`` (``day``, ``agent``, ``model``)
        between ``from_`` and ``to`` (``from`` is Python's)."""
        q = {"group_by": group_by, "from": from_, "to": to, "agent_id": agent_id, "limit": limit}
        return cast(Usage, self._call("GET", "/v1/usage", query=q))

    def purge_sessions(
        self,
        *,
        status: Optional[SessionStatus] = None,
        older_than: Optional[str] = None,
        expired: Optional[bool] = None,
        dry_run: Optional[bool] = None,
    ) -> PurgeResult:
        """Erases, for good, the sessions in ``status`` not updated since
        ``older_than`` (a duration such as ``"720h"``), or those past their
        ``expires_at`` (``expired=True``); ``dry_run`` only counts them.

        A purge, an integrity check and a backup run on the server as jobs:
        one that outlasts the server's wait (about 20 s) is answered ``202``
        with the job, which this method polls (:meth:`get_job`, about once a
        second) until it ends, then answers as usual: the result, the
        :class:`Problem` the job failed with, or :class:`JobInterrupted`.
        Interrupting the wait (``KeyboardInterrupt``) leaves the job running.
        Not to wait, send the route through :meth:`request` with
        ``headers={"Prefer": "respond-async"}`` and read the job later."""
        body: Dict[str, Any] = {}
        for k, v in (("status", status), ("older_than", older_than), ("expired", expired), ("dry_run", dry_run)):
            if v is not None:
                body[k] = v
        return cast(PurgeResult, self._await_job("POST", "/v1/admin/purge", json_body=body))

    def check_integrity(self, *, repair: Optional[str] = None) -> IntegrityReport:
        """Checks the database and the tenant's counters and search index
        (``repair="counters"`` repairs drifted counters first). Waits out a
        long check's job (see :meth:`purge_sessions`)."""
        return cast(IntegrityReport, self._await_job("GET", "/v1/admin/integrity", query={"repair": repair}))

    def get_job(self, id: str) -> Job:
        """A job (a purge, an integrity check or a backup that outlasted its
        route's wait): its ``state`` and ``progress``, then its ``result`` or
        ``error``."""
        return cast(Job, self._call("GET", "/v1/admin/jobs/" + _seg(id)))

    def _await_job(self, method: str, path: str, **kw: Any) -> Any:
        """The route's usual answer, or, when it answers 202, its job's once
        the job ends."""
        resp, _ = self._request(method, path, **kw)
        if resp.status != 202:
            return resp.json()
        job = cast(Job, resp.json())
        wait = _JOB_POLL_MAX / 4  # one asked for with respond-async may end at once
        while job["state"] == "running":
            self._sleep(wait)
            wait = min(2 * wait, _JOB_POLL_MAX)
            job = self.get_job(job["id"])
        return _job_result(job)

    def get_tenant_embedding(self) -> TenantEmbedding:
        return cast(TenantEmbedding, self._call("GET", "/v1/admin/embedding"))

    def put_tenant_embedding(
        self, url: str, model: str, *, dimensions: Optional[int] = None, api_key_env: Optional[str] = None
    ) -> TenantEmbedding:
        """Sets the embedding endpoint of the tenant's agents that name none
        (under one of the server's ``--embedding-allowed-urls``)."""
        body: Dict[str, Any] = {"url": url, "model": model}
        if dimensions is not None:
            body["dimensions"] = dimensions
        if api_key_env is not None:
            body["api_key_env"] = api_key_env
        return cast(TenantEmbedding, self._call("PUT", "/v1/admin/embedding", json_body=body))

    def delete_tenant_embedding(self) -> None:
        self._call("DELETE", "/v1/admin/embedding", idempotent=True, recover=_gone)

    def backup_database(self, *, name: Optional[str] = None) -> Backup:
        """A consistent copy of the whole database in the server's backup
        directory (an admin key of the tenant ``default`` only). Waits out a
        long backup's job (see :meth:`purge_sessions`)."""
        body: Dict[str, Any] = {} if name is None else {"name": name}
        return cast(Backup, self._await_job("POST", "/v1/admin/backup", json_body=body))

    # --- export --------------------------------------------------------------

    def import_session(self, data: bytes, *, as_new: bool = False) -> Session:
        """Restores a session from its export's bytes as the server wrote them
        (:meth:`export_session_bytes`, or a file of them), all or nothing
        (``as_new``: under new ids)."""
        return cast(
            Session,
            self._call(
                "POST",
                "/v1/sessions/import",
                query={"as_new": True if as_new else None},
                data=bytes(data),
                content_type="application/x-ndjson",
            ),
        )

    def export_session_bytes(self, id: str) -> bytes:
        """The session's export as the server wrote it, for
        :meth:`import_session` (whose checksum covers these very bytes)."""
        resp, _ = self._request("GET", "/v1/sessions/%s/export" % _seg(id))
        return resp.body

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
        after: Optional[str] = None,
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
        ``N`` (``0``: from the session's first event; for a message the
        session did not append itself, imported or forked in, from its
        creation); ``after=ID`` after the event ``ID`` (a ``last_id`` from
        before: ids are opaque strings of the caller's tenant, and another is
        ``400 invalid_event_id``); neither: from now (the
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
        after: Optional[str] = None,
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


def _job_result(job: Job) -> Any:
    """What an ended job answers: its result, or the problem its route would
    have raised."""
    if job["state"] == "succeeded":
        return job["result"]
    e = job["error"]
    if job["state"] == "failed" and e is not None:
        raise Problem(
            e["status"],
            e["code"],
            http.client.responses.get(e["status"], ""),
            e["detail"],
            type="urn:logbook:problem:" + e["code"],
            body=e,
        )
    if job["state"] == "interrupted":
        raise JobInterrupted(job["id"], job["kind"])
    raise LogbookError("job %s is %s" % (job["id"], job["state"]))


class _Recovered(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _gone(p: Problem) -> Optional[Dict[str, Any]]:
    """A resent DELETE that finds nothing: the first attempt deleted it."""
    return {} if p.code == "not_found" else None


def _floats(v: Optional[Sequence[float]]) -> Optional[str]:
    """A vector as the query string carries it: comma-separated numbers."""
    return None if not v else ",".join(repr(float(x)) for x in v)


def _put_checkpoint_fields(
    body: Dict[str, Any], namespace: Optional[str], client_id: Optional[str], metadata: Optional[Mapping[str, JSON]]
) -> None:
    if namespace:
        body["namespace"] = namespace
    if client_id is not None:
        body["client_id"] = client_id
    if metadata is not None:
        body["metadata"] = dict(metadata)


def _checkpoint_query(
    namespace: Optional[str],
    metadata: Optional[Mapping[str, Any]],
    before: Optional[str],
    before_namespace: Optional[str],
    values: bool,
    limit: Optional[int],
) -> Dict[str, Any]:
    q: Dict[str, Any] = {"namespace": namespace, "before": before, "before_namespace": before_namespace, "limit": limit}
    if not values:
        q["values"] = "false"
    for k, v in (metadata or {}).items():
        q["metadata." + k] = v if isinstance(v, str) else json.dumps(v)
    return q
