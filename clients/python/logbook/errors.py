"""Errors the client raises: ``Problem`` for an answer of the server,
``TransportError`` when no answer came."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, cast

from .types import FieldError


class LogbookError(Exception):
    """The base of every error this package raises."""


class Problem(LogbookError):
    """An error answer of the server: an RFC 9457 problem (``application/problem+json``).

    Branch on ``code`` (stable, snake_case: ``not_found``, ``validation_failed``,
    ``stale_seq`` …), never on ``detail``. ``errors`` names each bad field
    (``messages[1].tool_call_id``) and ``fields`` maps those names to their
    messages. ``body`` is the whole problem, for the keys some codes add
    (``latest_iteration``, ``last_seq``, ``from``/``to``, ``id``, ``line``), which
    are also properties. Quote ``request_id`` when reporting a problem.

    An error answer that is not a problem (say a proxy's HTML 502) becomes a
    ``Problem`` too, with ``code`` ``"http_<status>"``.
    """

    def __init__(
        self,
        status: int,
        code: str,
        title: str = "",
        detail: str = "",
        *,
        type: str = "",
        instance: Optional[str] = None,
        errors: Optional[List[FieldError]] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        body: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.type = type
        self.instance = instance
        self.errors: List[FieldError] = list(errors or [])
        self.request_id = request_id
        self.retry_after = retry_after
        self.body: Dict[str, Any] = dict(body or {})
        super().__init__(str(self))

    @classmethod
    def from_response(
        cls,
        status: int,
        body: bytes,
        content_type: str,
        request_id: Optional[str],
        retry_after: Optional[float],
        reason: str = "",
    ) -> "Problem":
        import json

        doc: Any = None
        if "json" in content_type:
            try:
                doc = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get("code"), str):
            text = body[:200].decode("utf-8", "replace").strip()
            return cls(status, "http_%d" % status, reason, text, request_id=request_id, retry_after=retry_after)
        errors = doc.get("errors")
        return cls(
            int(doc.get("status") or status),
            doc["code"],
            str(doc.get("title") or reason),
            str(doc.get("detail") or ""),
            type=str(doc.get("type") or ""),
            instance=doc.get("instance"),
            errors=[cast(FieldError, e) for e in errors if isinstance(e, dict)] if isinstance(errors, list) else None,
            request_id=request_id,
            retry_after=retry_after,
            body=doc,
        )

    @property
    def fields(self) -> Dict[str, str]:
        """The bad fields, by name: ``{"messages[1].tool_call_id": "is required when role is tool"}``."""
        return {e.get("field", ""): e.get("message", "") for e in self.errors}

    @property
    def latest_iteration(self) -> Optional[int]:
        """``stale_iteration`` only: the latest checkpoint's iteration."""
        return self.body.get("latest_iteration")

    @property
    def last_seq(self) -> Optional[int]:
        """``stale_seq`` only: the session's ``last_seq``, which another write moved."""
        return self.body.get("last_seq")

    def __str__(self) -> str:
        s = "%d %s: %s" % (self.status, self.code, self.detail or self.title)
        if self.request_id:
            s += " (request id %s)" % self.request_id
        return s

    def __repr__(self) -> str:
        return "Problem(status=%d, code=%r, detail=%r, errors=%r, request_id=%r)" % (
            self.status,
            self.code,
            self.detail,
            self.errors,
            self.request_id,
        )

    def __reduce__(self) -> Any:  # picklable despite the keyword-only arguments
        return (_rebuild_problem, (self.__dict__.copy(),))


def _rebuild_problem(state: Dict[str, Any]) -> Problem:
    p = Problem.__new__(Problem)
    p.__dict__.update(state)
    Exception.__init__(p, str(p))
    return p


class JobInterrupted(LogbookError):
    """A job (a purge, an integrity check, a backup) that the server stopped or
    restarted under: nothing says how far it got, so start it again."""

    def __init__(self, job_id: str, kind: str) -> None:
        super().__init__("job %s (%s) stopped when the server did; start it again" % (job_id, kind))
        self.job_id = job_id
        self.kind = kind


class TransportError(LogbookError):
    """No answer came from the server (connection refused or reset, timeout),
    after the retries the request allowed.

    ``maybe_applied`` is ``True`` when a request that changes something may have
    reached the server before the connection failed, and the client could not
    make a retry safe (a write with no idempotency key, such as a fenced rewind
    or an archival insert): read back before writing again. It is ``False`` when
    the request certainly did not arrive, or could not change anything.

    ``idempotency_key`` is the ``Idempotency-Key`` an append carried: send the
    append again with ``idempotency_key=`` that key, and it is stored once
    whether or not the failed attempt landed.
    """

    def __init__(
        self,
        message: str,
        *,
        maybe_applied: bool = False,
        cause: Optional[BaseException] = None,
        idempotency_key: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied
        self.cause = cause
        self.idempotency_key = idempotency_key
