"""A session for the OpenAI Agents SDK that stores its history in Logbook.

:class:`LogbookSession` has the methods of the SDK's ``Session`` protocol
(``SessionABC``): ``get_items``, ``add_items``, ``pop_item``,
``clear_session``, and the ``session_id`` and ``session_settings``
attributes. It does not import the SDK; pass it wherever the SDK takes a
session::

    from agents import Agent, Runner
    from logbook.openai_agents import LogbookSession

    session = LogbookSession("support-42")
    result = await Runner.run(agent, "Where is my refund?", session=session)

Each SDK item (a Responses API input item) becomes one Logbook message, in
order. The message's typed fields follow the "OpenAI Responses" table of docs/guides/content.md
(role and content parts, tool calls, tool results, reasoning), so that search,
context windows, resume's tool-call checks and other runtimes see the
conversation; and the whole item is kept in ``provider_item``, so
``get_items`` returns exactly the items that were added. An item the table
has no place for (a hosted tool call, an item the server would refuse as
typed, such as a tool result whose call is not in the session) is stored
with its item only, as an ``assistant`` message with empty content.
Messages written by other runtimes (no whole item in ``provider_item``) are
read back by the table's rules.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, cast

from .client import Client, _canon
from .errors import Problem, TransportError
from .types import Message, MessageInput, Part

__all__ = ["LogbookSession", "SessionHistoryError", "item_to_message", "message_to_items"]

log = logging.getLogger("logbook")

Item = Dict[str, Any]
"""One Responses API input item (the SDK's ``TResponseInputItem``), a dict."""

_MESSAGE_ROLES = ("user", "assistant", "system", "developer")
_LOGBOOK_FILE = re.compile(r"^file_[0-9a-f]{32}$")
_FIELD_MESSAGE = re.compile(r"^messages\[(\d+)\]")
_BATCH = 1000  # the most messages one append takes
_DEGRADABLE = ("validation_failed", "unknown_tool_call", "duplicate_tool_result")


class _Unmappable(Exception):
    pass


# --- items to messages --------------------------------------------------------


def _as_dict(item: Any) -> Item:
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)  # an SDK/openai pydantic model
    if callable(dump):
        return dict(dump(exclude_unset=True, mode="json"))
    raise TypeError("a session item must be a dict (a Responses input item), not %s" % type(item).__name__)


def _url(v: Any) -> Optional[str]:
    if isinstance(v, str) and v.startswith(("https://", "http://", "data:")):
        return v
    return None


def _parts_in(content: Sequence[Any], role: str) -> List[Part]:
    """Responses content parts as Logbook parts; the parts Logbook has no
    typed place for are left out (the whole item keeps them)."""
    parts: List[Part] = []
    for p in content:
        if not isinstance(p, Mapping):
            continue
        t = p.get("type")
        if t in ("input_text", "output_text", "text") and isinstance(p.get("text"), str):
            part: Part = {"type": "text", "text": p["text"]}
            if isinstance(p.get("annotations"), list):
                part["annotations"] = list(p["annotations"])
            parts.append(part)
        elif t == "refusal" and role == "assistant" and isinstance(p.get("refusal"), str):
            parts.append({"type": "refusal", "text": p["refusal"]})
        elif t in ("input_image", "input_file"):
            part = {"type": "image" if t == "input_image" else "file"}
            url = _url(p.get("image_url")) if t == "input_image" else (_url(p.get("file_data")) or _url(p.get("file_url")))
            file_id = p.get("file_id")
            if url:
                part["url"] = url
            elif isinstance(file_id, str) and _LOGBOOK_FILE.match(file_id):
                part["file_id"] = file_id
            elif isinstance(file_id, str) and file_id:
                part["provider_data"] = {"file_id": file_id}  # a file in OpenAI's own store
            else:
                continue
            if t == "input_image" and isinstance(p.get("detail"), str) and 0 < len(p["detail"]) <= 32:
                part["detail"] = p["detail"]
            if t == "input_file" and isinstance(p.get("filename"), str) and p["filename"]:
                part["filename"] = p["filename"]
            parts.append(part)
    return parts


def _typed(item: Item) -> MessageInput:
    t = item.get("type")
    role = item.get("role")
    if (t == "message" or t is None) and role in _MESSAGE_ROLES:
        content = item.get("content")
        if isinstance(content, str):
            return {"role": role, "content": content}
        if isinstance(content, list):
            return {"role": role, "content": _parts_in(content, role)}
        raise _Unmappable
    if t == "function_call":
        call_id, name, args = item.get("call_id"), item.get("name"), item.get("arguments")
        if not (isinstance(call_id, str) and 0 < len(call_id) <= 256):
            raise _Unmappable
        if not (isinstance(name, str) and 0 < len(name) <= 256 and isinstance(args, str)):
            raise _Unmappable
        try:
            json.loads(args)  # the server keeps only arguments that are JSON
        except ValueError:
            raise _Unmappable from None
        return {"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "name": name, "arguments": args}]}
    if t == "function_call_output":
        call_id, output = item.get("call_id"), item.get("output")
        if not (isinstance(call_id, str) and 0 < len(call_id) <= 256):
            raise _Unmappable
        if isinstance(output, str):
            return {"role": "tool", "tool_call_id": call_id, "content": output}
        if isinstance(output, list):
            return {"role": "tool", "tool_call_id": call_id, "content": _parts_in(output, "tool")}
        raise _Unmappable
    if t == "reasoning":
        part: Part = {"type": "reasoning", "summary": []}
        for s in item.get("summary") or []:
            if isinstance(s, Mapping) and isinstance(s.get("text"), str):
                part["summary"].append(s["text"])
        if isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]:
            part["encrypted_content"] = item["encrypted_content"]
        texts = [c.get("text") for c in item.get("content") or [] if isinstance(c, Mapping)]
        if len(texts) == 1 and isinstance(texts[0], str):
            part["text"] = texts[0]
        return {"role": "assistant", "content": [part]}
    raise _Unmappable


def _opaque(item: Item) -> MessageInput:
    return {"role": "assistant", "content": "", "provider_item": _canon(item)}


# An item keeps its large data: URLs once, in the typed part (which the server
# stores as a file): in provider_item each is a reference to its part.
_REF = re.compile(r"^logbook:content\[(\d+)\]\.url$")
_INLINE_MIN = 1024


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)


def _map_strings(v: Any, f: Callable[[str], str]) -> Any:
    if isinstance(v, str):
        return f(v)
    if isinstance(v, list):
        return [_map_strings(x, f) for x in v]
    if isinstance(v, dict):
        return {k: _map_strings(x, f) for k, x in v.items()}
    return v


def _without_inline(item: Item, msg: MessageInput) -> Item:
    content = msg.get("content")
    if not isinstance(content, list):
        return item
    at: Dict[str, int] = {}
    for i, p in enumerate(content):
        u = p.get("url")
        if isinstance(u, str) and u.startswith("data:") and len(u) >= _INLINE_MIN and u not in at:
            at[u] = i
    if not at or any(_REF.match(x) for x in _strings(item)):
        return item  # a reference would be ambiguous: keep it whole
    return cast(Item, _map_strings(item, lambda x: "logbook:content[%d].url" % at[x] if x in at else x))


def _with_inline(pi: Item, content: Any) -> Item:
    if not isinstance(content, list) or not any(_REF.match(x) for x in _strings(pi)):
        return pi

    def back(x: str) -> str:
        m = _REF.match(x)
        if m and int(m.group(1)) < len(content):
            u = content[int(m.group(1))].get("url")
            if isinstance(u, str):
                return u
        return x

    return cast(Item, _map_strings(pi, back))


def item_to_message(item: Any, client_id: Optional[str] = None) -> MessageInput:
    """The message that stores one Responses input item: typed fields where
    README's mapping table has a place for them, and the item (as JSON gives
    it back) in ``provider_item``, its large ``data:`` URLs held only by the
    typed parts (the server stores them as files)."""
    d = _as_dict(item)
    try:
        msg = _typed(d)
        msg["provider_item"] = _without_inline(_canon(d), msg)
    except _Unmappable:
        msg = _opaque(d)
    if client_id is not None:
        msg["client_id"] = client_id
    return msg


# --- messages to items --------------------------------------------------------


def _parts_out(content: Any, role: str) -> Any:
    if not isinstance(content, list):
        return content
    out: List[Dict[str, Any]] = []
    for p in content:
        t = p.get("type")
        if t == "text":
            q: Dict[str, Any] = {"type": "output_text" if role == "assistant" else "input_text", "text": p.get("text", "")}
            if "annotations" in p:
                q["annotations"] = p["annotations"]
        elif t == "refusal":
            q = {"type": "refusal", "refusal": p.get("text", "")}
        elif t == "image":
            q = {"type": "input_image"}
            if p.get("url"):
                q["image_url"] = p["url"]
            if p.get("file_id"):
                q["file_id"] = p["file_id"]
            if p.get("detail"):
                q["detail"] = p["detail"]
        elif t == "file":
            q = {"type": "input_file"}
            url = p.get("url")
            if url:
                q["file_data" if url.startswith("data:") else "file_url"] = url
            if p.get("file_id"):
                q["file_id"] = p["file_id"]
            if p.get("filename"):
                q["filename"] = p["filename"]
        else:
            continue  # a reasoning part inside a message has no Responses form
        q.update(p.get("provider_data") or {})
        out.append(q)
    return out


def message_to_items(message: Mapping[str, Any]) -> List[Item]:
    """The Responses input items a stored message stands for: its
    ``provider_item`` when that is a whole item (it has ``type`` or ``role``),
    else README's rules (a ``tool`` message is a ``function_call_output``, each
    tool call a ``function_call``, a lone reasoning part a ``reasoning`` item,
    anything else a ``message``) with ``provider_item``'s keys added."""
    pi = message.get("provider_item")
    if isinstance(pi, dict) and ("type" in pi or "role" in pi):
        return [_with_inline(pi, message.get("content"))]
    extra: Dict[str, Any] = pi if isinstance(pi, dict) else {}
    role = message["role"]
    content = message.get("content")
    if role == "tool":
        item = {"type": "function_call_output", "call_id": message.get("tool_call_id"), "output": _parts_out(content, "tool")}
        item.update(extra)
        return [item]
    calls = message.get("tool_calls") or []
    if calls:
        items: List[Item] = []
        if content:  # text beside the calls: a message before them
            items.append({"type": "message", "role": role, "content": _parts_out(content, role)})
        for c in calls:
            call = {"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]}
            call.update(c.get("provider_data") or {})
            items.append(call)
        if len(calls) == 1:
            items[-1].update(extra)
        return items
    if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "reasoning":
        p = content[0]
        item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": s} for s in p.get("summary") or []]}
        if p.get("text") is not None:
            item["content"] = [{"type": "reasoning_text", "text": p["text"]}]
        if p.get("encrypted_content"):
            item["encrypted_content"] = p["encrypted_content"]
        item.update(extra)
        return [item]
    item = {"type": "message", "role": role, "content": _parts_out(content, role)}
    item.update(extra)
    return [item]


# --- the session --------------------------------------------------------------


class SessionHistoryError(Exception):
    """A history transaction refused: a changed transaction under an operation
    id already applied, or a suffix that no longer matches."""


def _canonical(v: Any) -> str:
    """JSON with every object's keys sorted: items compare by structure."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def _operation_key(operation_id: str) -> str:
    return "agents-op:" + hashlib.sha256(operation_id.encode("utf-8")).hexdigest()


def _apply_mutations(items: List[Item], mutations: Sequence[Mapping[str, Any]]) -> List[Item]:
    """The SDK's history mutations: a function call replaced (its first
    occurrence; the others dropped)."""
    out = list(items)
    for m in mutations:
        if m.get("type") != "replace_function_call":
            continue
        call_id = m.get("call_id", m.get("callId"))
        nxt: List[Item] = []
        kept = False
        for item in out:
            if item.get("type") == "function_call" and item.get("call_id", item.get("callId")) == call_id:
                if not kept:
                    nxt.append(_canon(_as_dict(m["replacement"])))
                kept = True
                continue
            nxt.append(item)
        out = nxt
    return out


class LogbookSession:
    """An OpenAI Agents SDK session stored in a Logbook session, with the same
    capabilities, under the same names (snake_case), as the TypeScript
    client's ``LogbookSession``.

    ``session_id`` names the Logbook session; it is created on the first
    write if it does not exist (with ``agent_id``, ``title`` and
    ``metadata``). ``client`` defaults to ``Client()`` (``$LOGBOOK_URL``,
    ``$LOGBOOK_API_KEY``). The async methods run their blocking twins
    (``…_sync``) in a thread.

    Every change is one request, atomic and safe to resend:

    - ``add_items`` appends the items as one batch (chunks of 1000) under one
      ``Idempotency-Key`` per batch.
    - ``replace_history_with_compaction`` records a compaction through the
      session's last message and appends the replacement in the same write:
      the replaced messages stay in Logbook; the session's items are what
      follows the latest compaction.
    - ``apply_history_transaction(operation_id, transaction)`` appends
      (``{"type": "append_items", "items": …}``) or replaces a suffix
      (``{"type": "replace_suffix", "expected_suffix": …, "replacement": …}``)
      with a rewind fenced by ``expected_last_seq``; the operation id keys the
      write, so a repeat does nothing and a different transaction under the
      same id raises :class:`SessionHistoryError`.
    - ``apply_history_mutations(mutations)`` replaces function calls with one
      fenced rewind.
    - ``pop_item`` is a fenced rewind by one; ``clear_session`` a rewind to 0,
      sent at once. (The TypeScript session holds a clear back until the end
      of its tick, to send it with the ``addItems`` that follows; here an
      event loop may end with the call (``asyncio.run``), so a runtime that
      replaces a history calls ``replace_history_with_compaction`` or
      ``apply_history_transaction``, one request each.)

    Items come back exactly as added; a large ``data:`` URL travels once, in
    the typed part, which the server stores as a file. Reasoning items keep
    their ids.
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        client: Optional[Client] = None,
        *,
        agent_id: Optional[str] = None,
        title: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        session_settings: Any = None,
    ) -> None:
        self.session_id = session_id
        self.client = client if client is not None else Client()
        self.session_settings = session_settings
        self._agent_id = agent_id
        self._title = title
        self._metadata = dict(metadata) if metadata else None

    def __repr__(self) -> str:
        return "LogbookSession(%r, %r)" % (self.session_id, self.client)

    # The SDK's hooks.

    def preserve_reasoning_item_ids_for_persistence(self) -> bool:
        """Logbook keeps reasoning items' ids."""
        return True

    def prepare_history_item_for_model_input(self, item: Item) -> Item:
        """Items come back as they were added: nothing to take off."""
        return item

    def prepare_history_items_for_persistence_comparison(self, items: List[Item]) -> List[Item]:
        """Items come back as they were added: nothing to normalize."""
        return items

    # The async methods.

    async def get_items(self, limit: Optional[int] = None, *, turn_limit: Optional[int] = None) -> List[Item]:
        """The history (what follows the latest compaction), oldest first; with
        ``limit``, only the newest ``limit`` items; with ``turn_limit``, only
        the newest ``turn_limit`` turns (a turn starts at a user message)."""
        return await asyncio.to_thread(self.get_items_sync, limit, turn_limit=turn_limit)

    async def add_items(self, items: List[Item]) -> None:
        await asyncio.to_thread(self.add_items_sync, items)

    async def pop_item(self) -> Optional[Item]:
        return await asyncio.to_thread(self.pop_item_sync)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self.clear_session_sync)

    async def replace_history_with_compaction(self, items: List[Item]) -> None:
        await asyncio.to_thread(self.replace_history_with_compaction_sync, items)

    async def apply_history_transaction(self, operation_id: str, transaction: Mapping[str, Any]) -> None:
        await asyncio.to_thread(self.apply_history_transaction_sync, operation_id, transaction)

    async def apply_history_mutations(self, mutations: Sequence[Mapping[str, Any]]) -> None:
        await asyncio.to_thread(self.apply_history_mutations_sync, mutations)

    # Their blocking twins (each sends at once).

    def get_items_sync(self, limit: Optional[int] = None, *, turn_limit: Optional[int] = None) -> List[Item]:
        if limit is None:
            limit = getattr(self.session_settings, "limit", None)
        if (limit is not None and limit <= 0) or (turn_limit is not None and turn_limit <= 0):
            return []
        items = [item for item, _ in self._history()["entries"]]
        if turn_limit is not None:
            turns, start = 0, 0
            for i in range(len(items) - 1, -1, -1):
                if items[i].get("role") == "user":
                    turns += 1
                    if turns >= turn_limit:
                        start = i
                        break
            items = items[start:]
        if limit is not None:
            items = items[-limit:]
        return items

    def add_items_sync(self, items: Sequence[Item]) -> None:
        if not items:
            return
        dicts = [_as_dict(i) for i in items]
        for start in range(0, len(dicts), _BATCH):
            self._append(dicts[start : start + _BATCH])

    def pop_item_sync(self) -> Optional[Item]:
        for _ in range(100):
            h = self._history()
            if not h["entries"]:
                return None
            last: Message = h["entries"][-1][1]
            items = message_to_items(last)
            # A message that stands for several items (parallel calls another
            # runtime stored together) gives back all but its last, in the same
            # transaction.
            tail = [item_to_message(i) for i in items[:-1]]
            try:
                self.client.rewind(self.session_id, last["seq"] - 1, expected_last_seq=h["last_seq"], messages=tail)
            except Problem as p:
                if p.code == "stale_seq":
                    continue  # another writer came first: look again
                raise
            except TransportError as e:
                if not e.maybe_applied:
                    raise
                if self._still_there(last):
                    continue  # it did not land: try again
                # Gone: our rewind landed before the connection failed.
            return items[-1] if items else None
        raise RuntimeError("pop_item: the session kept changing under 100 attempts")

    def clear_session_sync(self) -> None:
        self._clear_now()

    def replace_history_with_compaction_sync(self, items: Sequence[Item]) -> None:
        """Replaces the history with a compaction item and the items kept, in
        one write (a compaction record through the last message, and the items
        appended after it)."""
        self._replace([_as_dict(i) for i in items])

    def apply_history_transaction_sync(self, operation_id: str, transaction: Mapping[str, Any]) -> None:
        if not isinstance(operation_id, str) or not operation_id.strip():
            raise SessionHistoryError("Session history transaction operationId must be a non-empty string.")
        if not isinstance(transaction, Mapping):
            raise SessionHistoryError("Session history transaction must be an object.")
        key = _operation_key(operation_id)
        t = transaction.get("type")
        if t == "append_items" and isinstance(transaction.get("items"), list):
            items = [_as_dict(i) for i in transaction["items"]]
            if len(items) > _BATCH:
                raise SessionHistoryError("a history transaction appends at most %d items" % _BATCH)
            try:
                self._append(items, key)
            except Problem as p:
                if p.code == "idempotency_conflict":
                    raise SessionHistoryError(
                        "Session history operation was already applied with a different transaction."
                    ) from p
                raise
            return
        expected = transaction.get("expected_suffix", transaction.get("expectedSuffix"))
        replacement = transaction.get("replacement")
        if t != "replace_suffix" or not isinstance(expected, list) or not isinstance(replacement, list):
            raise SessionHistoryError("Unsupported session history transaction type.")
        self._replace_suffix(key, [_canon(_as_dict(i)) for i in expected], [_canon(_as_dict(i)) for i in replacement])

    def apply_history_mutations_sync(self, mutations: Sequence[Mapping[str, Any]]) -> None:
        if not mutations:
            return
        for _ in range(100):
            h = self._history()
            old = [item for item, _ in h["entries"]]
            new = _apply_mutations(old, mutations)
            first = 0
            while first < len(old) and first < len(new) and _canonical(old[first]) == _canonical(new[first]):
                first += 1
            if first == len(old) and first == len(new):
                return  # applied already
            try:
                self._rewind_from(h, first, new[first:])
                return
            except Problem as p:
                if p.code != "stale_seq":
                    raise
        raise SessionHistoryError("the session kept changing under 100 attempts to rewrite its history")

    # Helpers.

    def _clear_now(self) -> None:
        try:
            self.client.rewind(self.session_id, 0)
        except Problem as p:
            if p.code != "not_found":
                raise

    def _history(self) -> Dict[str, Any]:
        """The visible history (what follows the latest compaction), from one
        snapshot: its (item, message) entries and the session's last seq."""
        try:
            ctx = self.client.get_context(self.session_id)
        except Problem as p:
            if p.code == "not_found":
                return {"entries": [], "last_seq": 0, "exists": False}
            raise
        entries = [(item, m) for m in ctx["messages"] for item in message_to_items(m)]
        return {"entries": entries, "last_seq": ctx["last_seq"], "exists": True}

    def _still_there(self, m: Message) -> bool:
        try:
            got = self.client.get_message(self.session_id, m["id"])
        except Problem as p:
            if p.code == "not_found":
                return False
            raise
        return got["seq"] == m["seq"]

    def _ensure_session(self) -> None:
        try:
            self.client.create_session(self.session_id, agent_id=self._agent_id, title=self._title, metadata=self._metadata)
        except Problem as p:
            if p.code != "conflict":  # made meanwhile by another writer
                raise

    def _send(self, items: List[Item], send: Any, client_ids: Any = None) -> None:
        """Sends items as messages through send: typed where the server takes
        their typed fields, each refused one stored untyped instead; creates
        the session once if it is missing."""
        msgs = [item_to_message(it, client_ids(i) if client_ids else None) for i, it in enumerate(items)]
        opaque: Set[int] = set()
        created = False
        while True:
            body: List[MessageInput] = []
            for i in range(len(items)):
                if i in opaque:
                    m = _opaque(items[i])
                    if client_ids:
                        m["client_id"] = client_ids(i)
                    body.append(m)
                else:
                    body.append(msgs[i])
            try:
                send(body)
                return
            except Problem as p:
                if p.code == "not_found" and not created and p.body.get("resource") != "message":
                    self._ensure_session()
                    created = True
                    continue
                if p.code not in _DEGRADABLE:
                    raise
                named = {int(mt.group(1)) for mt in (_FIELD_MESSAGE.match(e.get("field", "")) for e in p.errors) if mt}
                fresh = {i for i in named if i < len(items) and i not in opaque}
                if not fresh:
                    raise
                for i in sorted(fresh):
                    log.info(
                        "logbook: storing %s item %d of session %s untyped (%s: %s)",
                        items[i].get("type", "message"),
                        i,
                        self.session_id,
                        p.code,
                        p.fields,
                    )
                opaque |= fresh

    def _append(self, items: List[Item], key: Optional[str] = None) -> None:
        def send(body: List[MessageInput]) -> None:
            if key is None:
                self.client.append_messages(self.session_id, body)
            else:
                self.client.append_messages(self.session_id, body, idempotency_key=key)

        try:
            self._send(items, send, (lambda i: "%s:%d" % (key, i)) if key else None)
        except Problem as p:
            if key is None and p.code == "payload_too_large" and len(items) > 1:
                half = len(items) // 2
                self._append(items[:half])
                self._append(items[half:])
                return
            raise

    def _replace(self, items: List[Item]) -> None:
        """The whole history replaced by items in one write: a compaction
        record and the items after it when they hold a compaction item and
        there is a history to compact; a rewind to 0 with them otherwise."""
        if len(items) > _BATCH:
            raise SessionHistoryError("a history is replaced by at most %d items at once" % _BATCH)
        items = [_canon(i) for i in items]
        compaction = next((i for i in items if i.get("type") == "compaction"), None)
        for _ in range(100):
            try:
                last_seq = self.client.get_session(self.session_id)["last_seq"]
            except Problem as p:
                if p.code != "not_found":
                    raise
                last_seq = 0

            def send(body: List[MessageInput]) -> None:
                if last_seq > 0 and compaction is not None:
                    enc = compaction.get("encrypted_content")
                    summary: Any = [{"type": "reasoning", "encrypted_content": enc}] if isinstance(enc, str) and enc else "(compacted history)"
                    try:
                        self.client.create_compaction(
                            self.session_id,
                            last_seq,
                            summary,
                            provider_item=compaction,
                            expected_last_seq=last_seq,
                            messages=body,
                        )
                        return
                    except Problem as p:
                        # Nothing follows the latest compaction: only items to add.
                        if not (p.errors and p.errors[0].get("field") == "through_seq"):
                            raise
                    self.client.rewind(self.session_id, last_seq, expected_last_seq=last_seq, messages=body)
                elif last_seq > 0:
                    self.client.rewind(self.session_id, 0, expected_last_seq=last_seq, messages=body)
                elif body:
                    self.client.append_messages(self.session_id, body, expected_last_seq=0)

            try:
                self._send(items, send)
                return
            except Problem as p:
                if p.code != "stale_seq":
                    raise
        raise SessionHistoryError("the session kept changing under 100 attempts to replace its history")

    def _replace_suffix(self, key: str, expected: List[Item], replacement: List[Item]) -> None:
        want = [_canonical(i) for i in replacement]
        for _ in range(100):
            h = self._history()
            entries = h["entries"]
            if replacement:
                # Applied already (a resend after a crash): its first message is there under the operation's id.
                at = next((i for i, (_, m) in enumerate(entries) if m.get("client_id") == "%s:0" % key), -1)
                if at >= 0:
                    got = [_canonical(item) for item, _ in entries[at : at + len(replacement)]]
                    if got == want:
                        return
                    raise SessionHistoryError("Session history operation was already applied with a different transaction.")
            cut = len(entries) - len(expected)
            if cut < 0 or any(_canonical(expected[i]) != _canonical(entries[cut + i][0]) for i in range(len(expected))):
                raise SessionHistoryError("Session history suffix no longer matches the transaction precondition.")
            try:
                self._rewind_from(h, cut, replacement, key)
                return
            except Problem as p:
                if p.code != "stale_seq":
                    raise
        raise SessionHistoryError("the session kept changing under 100 attempts to apply a history transaction")

    def _rewind_from(self, h: Dict[str, Any], start: int, tail: List[Item], key: Optional[str] = None) -> None:
        """One fenced rewind that keeps the visible items before ``start`` and
        appends ``tail`` after them; a message that stands for several items,
        cut inside, is removed whole and its items before the cut re-added."""
        entries = h["entries"]
        to_seq = h["last_seq"]
        keep: List[Item] = []
        if start < len(entries):
            seq = entries[start][1]["seq"]
            to_seq = seq - 1
            first = next(i for i, (_, m) in enumerate(entries) if m["seq"] == seq)
            keep = [item for item, _ in entries[first:start]]
        items = keep + list(tail)
        if len(items) > _BATCH:
            raise SessionHistoryError("a history rewrite appends at most %d items at once" % _BATCH)
        if not h["exists"] and not items:
            return

        def send(body: List[MessageInput]) -> None:
            if not h["exists"]:
                self.client.append_messages(self.session_id, body, expected_last_seq=0, idempotency_key=key)
                return
            self.client.rewind(
                self.session_id,
                to_seq,
                expected_last_seq=h["last_seq"],
                messages=body,
                idempotency_key="%s:%d:%d" % (key, to_seq, h["last_seq"]) if key else None,
            )

        n = len(keep)
        ids = (lambda i: "%s:%d" % (key, i - n) if i >= n else "%s:kept:%d" % (key, i)) if key else None
        self._send(items, send, ids)
