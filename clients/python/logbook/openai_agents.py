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
order. The message's typed fields follow README's "OpenAI Responses" table
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
import json
import logging
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set

from .client import Client, _canon
from .errors import Problem, TransportError
from .types import Message, MessageInput, Part

__all__ = ["LogbookSession", "item_to_message", "message_to_items"]

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
            else:
                continue  # the provider's own file id: only in the item
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


def item_to_message(item: Any) -> MessageInput:
    """The message that stores one Responses input item: typed fields where
    README's mapping table has a place for them, and the whole item (as JSON
    gives it back) in ``provider_item``."""
    d = _as_dict(item)
    try:
        msg = _typed(d)
    except _Unmappable:
        return _opaque(d)
    msg["provider_item"] = _canon(d)
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
        return [pi]
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


class LogbookSession:
    """An OpenAI Agents SDK session stored in a Logbook session.

    ``session_id`` names the Logbook session; it is created on the first
    ``add_items`` if it does not exist (with ``agent_id``, ``title`` and
    ``metadata``). ``client`` defaults to ``Client()`` (``$LOGBOOK_URL``,
    ``$LOGBOOK_API_KEY``). The methods run the blocking client in a thread
    (``asyncio.to_thread``).

    - ``add_items`` appends the items as one all-or-nothing batch (chunks of
      1000, split further if the server finds a batch too large), under one
      ``Idempotency-Key`` per batch, so the client's retries never store an
      item twice.
    - ``pop_item`` removes the newest item with a rewind fenced by
      ``expected_last_seq``: of two concurrent pops, one wins and the other
      pops the item before it, never the same one.
    - ``clear_session`` rewinds the session to 0 (its checkpoints and
      compactions go too; the session itself stays). A closed session refuses
      both (``Problem`` ``session_closed``).
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
        page_size: int = 200,
    ) -> None:
        self.session_id = session_id
        self.client = client if client is not None else Client()
        self.session_settings = session_settings
        self._agent_id = agent_id
        self._title = title
        self._metadata = dict(metadata) if metadata else None
        self._page_size = max(1, min(200, page_size))

    def __repr__(self) -> str:
        return "LogbookSession(%r, %r)" % (self.session_id, self.client)

    # The SDK's methods: each runs its blocking twin in a thread.

    async def get_items(self, limit: Optional[int] = None, *, turn_limit: Optional[int] = None) -> List[Item]:
        """The history, oldest first; with ``limit``, only the newest ``limit``
        items; with ``turn_limit``, only the newest ``turn_limit`` turns (a turn
        starts at a user message)."""
        return await asyncio.to_thread(self.get_items_sync, limit, turn_limit=turn_limit)

    async def add_items(self, items: List[Item]) -> None:
        await asyncio.to_thread(self.add_items_sync, items)

    async def pop_item(self) -> Optional[Item]:
        return await asyncio.to_thread(self.pop_item_sync)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self.clear_session_sync)

    # Their blocking twins.

    def get_items_sync(self, limit: Optional[int] = None, *, turn_limit: Optional[int] = None) -> List[Item]:
        if limit is None:
            limit = getattr(self.session_settings, "limit", None)
        if (limit is not None and limit <= 0) or (turn_limit is not None and turn_limit <= 0):
            return []
        try:
            if limit is None and turn_limit is None:
                items: List[Item] = []
                for m in self.client.list_messages(self.session_id, limit=self._page_size):
                    items.extend(message_to_items(m))
                return items
            newest: List[Item] = []  # newest first
            turns = 0
            size = min(self._page_size, limit) if limit is not None and turn_limit is None else self._page_size
            for m in self.client.list_messages(self.session_id, order="desc", limit=size):
                for item in reversed(message_to_items(m)):
                    newest.append(item)
                    if item.get("role") == "user":
                        turns += 1
                    if (limit is not None and len(newest) >= limit) or (turn_limit is not None and turns >= turn_limit):
                        return newest[::-1]
            return newest[::-1]
        except Problem as p:
            if p.code == "not_found":
                return []
            raise

    def add_items_sync(self, items: Sequence[Item]) -> None:
        if not items:
            return
        dicts = [_as_dict(i) for i in items]
        for start in range(0, len(dicts), _BATCH):
            self._append(dicts[start : start + _BATCH])

    def pop_item_sync(self) -> Optional[Item]:
        for _ in range(100):
            try:
                page = self.client.list_messages(self.session_id, order="desc", limit=1).first_page()
            except Problem as p:
                if p.code == "not_found":
                    return None
                raise
            if not page["data"]:
                return None
            last: Message = page["data"][0]
            items = message_to_items(last)
            # A message that stands for several items (parallel calls another
            # runtime stored together) gives back all but its last, in the same
            # transaction.
            tail = [item_to_message(i) for i in items[:-1]]
            try:
                self.client.rewind(self.session_id, last["seq"] - 1, expected_last_seq=last["seq"], messages=tail)
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
        try:
            self.client.rewind(self.session_id, 0)
        except Problem as p:
            if p.code != "not_found":
                raise

    # Helpers.

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

    def _append(self, items: List[Item]) -> None:
        msgs = [item_to_message(i) for i in items]
        opaque: Set[int] = set()
        created = False
        while True:
            body = [_opaque(items[i]) if i in opaque else msgs[i] for i in range(len(items))]
            try:
                self.client.append_messages(self.session_id, body)
                return
            except Problem as p:
                if p.code == "not_found" and not created:
                    self._ensure_session()
                    created = True
                    continue
                if p.code == "payload_too_large" and len(items) > 1:
                    half = len(items) // 2
                    self._append(items[:half])
                    self._append(items[half:])
                    return
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
