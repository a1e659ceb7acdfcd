"""The shapes of Logbook's JSON, as ``TypedDict``s mirroring ``openapi.yaml``.

Responses are plain ``dict``s at run time (``json.loads`` output); these types
only tell a type checker which keys they have. Every documented key of a
response object is always present (``None`` when absent), so response types
are total. The server may add keys in later versions: code should ignore keys
it does not know.

Request bodies (``*Input``, ``*Create``) are partial: only the keys you give
are sent.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

JSON = Any
"""Any JSON value (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``, ``None``)."""

Role = Literal["user", "assistant", "system", "tool", "developer"]
SessionStatus = Literal["created", "active", "completed", "archived"]
Scope = Literal["read", "write", "admin"]
PartType = Literal["text", "image", "file", "reasoning", "refusal"]


# --- content -----------------------------------------------------------------


class Part(TypedDict, total=False):
    """One typed piece of a message's content. Which keys a part may carry
    depends on its ``type`` (see ``Part`` in openapi.yaml); ``type`` is always
    there."""

    type: PartType
    text: str
    annotations: List[JSON]
    file_id: str
    url: str
    media_type: str
    filename: str
    detail: str
    summary: List[str]
    encrypted_content: str
    signature: str
    provider_data: Dict[str, JSON]


Content = Union[str, List[Part]]
"""A string, or a list of at most 128 parts."""


class _ToolCallBase(TypedDict):
    id: str
    name: str
    arguments: str  # a string holding JSON, as OpenAI sends it


class ToolCall(_ToolCallBase, total=False):
    """One function call of an assistant message."""

    provider_data: Dict[str, JSON]  # absent when none was sent


# --- sessions ----------------------------------------------------------------


class Session(TypedDict):
    id: str
    agent_id: Optional[str]
    title: Optional[str]
    status: SessionStatus
    metadata: Dict[str, JSON]
    message_count: int
    last_seq: int
    total_tokens: int
    total_cost: float
    turn_count: int
    parent_id: Optional[str]
    forked_at_seq: Optional[int]
    created_at: str
    updated_at: str
    closed_at: Optional[str]


# --- messages ----------------------------------------------------------------


class Message(TypedDict):
    id: str
    session_id: str
    seq: int
    role: Role
    content: Content
    name: Optional[str]
    tool_calls: Optional[List[ToolCall]]
    tool_call_id: Optional[str]
    is_error: bool
    agent_id: Optional[str]
    model: Optional[str]
    tokens: int
    cost: float
    metadata: Dict[str, JSON]
    provider_item: Optional[Dict[str, JSON]]
    created_at: str


class _MessageInputBase(TypedDict):
    role: Role


class MessageInput(_MessageInputBase, total=False):
    """One message to append. Only ``role`` is required. A ``tool`` message
    needs ``tool_call_id``; only ``assistant`` messages carry ``tool_calls``.

    ``idempotency_key`` names this message within its session: if a message
    with this key was stored before, the stored one is returned instead of a
    new one. The client does not set it for you (it sets the request's
    ``Idempotency-Key`` header instead); set it yourself to make a message
    idempotent across separate requests (a batch, a rewind's tail)."""

    content: Content
    name: Optional[str]
    tool_calls: Optional[List[ToolCall]]
    tool_call_id: Optional[str]
    is_error: bool
    agent_id: Optional[str]
    model: Optional[str]
    tokens: int
    cost: float
    metadata: Optional[Dict[str, JSON]]
    provider_item: Optional[Dict[str, JSON]]
    idempotency_key: str


class RewindResult(TypedDict):
    session: Session
    removed_messages: int
    removed_checkpoints: List[int]
    removed_compactions: int
    messages: List[Message]


class MessageHit(TypedDict):
    session_id: str
    message_id: str
    seq: int
    role: Role
    created_at: str
    snippet: str
    content: str
    rank: float


class MessageSearchResult(TypedDict):
    data: List[MessageHit]
    index_lag: int
    partial: bool


class Compaction(TypedDict):
    id: str
    session_id: str
    through_seq: int
    summary: Content
    tokens: int
    model: Optional[str]
    provider_item: Optional[Dict[str, JSON]]
    created_at: str


class ContextOmitted(TypedDict):
    messages: int
    tokens: int
    first_seq: Optional[int]
    last_seq: Optional[int]


class BlockRef(TypedDict):
    agent_id: str
    label: str


class Block(TypedDict):
    id: str
    agent_id: str
    label: str
    value: str
    limit: int
    description: Optional[str]
    read_only: bool
    version: int
    updated_at: str
    owner_agent_id: Optional[str]
    owner_label: Optional[str]
    shared_with: List[BlockRef]


class SessionContext(TypedDict):
    session_id: str
    last_seq: int
    compaction: Optional[Compaction]
    messages: List[Message]
    blocks: Optional[List[Block]]
    tokens: int
    max_tokens: Optional[int]
    omitted: ContextOmitted
    over_budget: bool


# --- checkpoints, resume, repair ---------------------------------------------


class _PendingToolCallBase(TypedDict):
    id: str
    tool_name: str


class PendingToolCall(_PendingToolCallBase, total=False):
    tool_input: JSON
    started_at: Optional[str]


class CheckpointState(TypedDict, total=False):
    """The runtime's loop state, kept as given. The server reads these keys;
    any others are kept too (a ``TypedDict`` cannot say so: pass a plain
    ``dict``)."""

    schema_version: Optional[int]
    pause_until_ms: Optional[int]
    pending_tool_calls: Optional[List[PendingToolCall]]
    last_tool_result: JSON
    stop_reason: Optional[str]


class Checkpoint(TypedDict):
    id: str
    session_id: str
    iteration: int
    state: Dict[str, JSON]
    last_seq: int
    sha256: str
    created_at: str


class Repair(TypedDict):
    action: Literal[
        "append_interrupted_result",
        "recount_turns",
        "rewind",
        "fork",
        "repair_counters",
        "write_checkpoint",
        "upgrade_server",
    ]
    automatic: bool
    method: Optional[str]
    path: Optional[str]
    body: Optional[Dict[str, JSON]]


class ResumeProblem(TypedDict):
    code: str
    seq: Optional[int]
    detail: str
    repair: Repair


class ResumeValidation(TypedDict):
    ok: bool
    schema_version: int
    problems: List[ResumeProblem]
    warnings: List[ResumeProblem]


class Resume(TypedDict):
    session: Session
    checkpoint: Optional[Checkpoint]
    messages_since_checkpoint: List[Message]
    more_messages: bool
    pending_tool_calls: List[PendingToolCall]
    validation: ResumeValidation


class RepairResult(TypedDict):
    session: Session
    repaired: List[ResumeProblem]
    messages: List[Message]
    unrepaired: List[ResumeProblem]


# --- agents and memory -------------------------------------------------------


class Agent(TypedDict):
    id: str
    name: str
    agent_type: str
    model: Optional[str]
    system: Optional[str]
    tool_ids: List[str]
    tags: List[str]
    metadata: Dict[str, JSON]
    created_at: str
    updated_at: str


class Passage(TypedDict):
    id: str
    agent_id: str
    content: str
    tags: List[str]
    metadata: Dict[str, JSON]
    created_at: str


class PassageHit(Passage):
    snippet: str
    rank: float


class PassageSearchResult(TypedDict):
    data: List[PassageHit]


class ToolDef(TypedDict):
    name: str
    description: str
    parameters: Dict[str, JSON]


class ToolResult(TypedDict):
    result: str
    is_error: bool


# --- files, keys, health -----------------------------------------------------


class File(TypedDict):
    id: str
    sha256: str
    size: int
    media_type: str
    created_at: str


class APIKey(TypedDict):
    id: str
    tenant: str
    name: str
    scope: Scope
    created_at: str
    revoked_at: Optional[str]
    user_id: Optional[str]  # the end user a bound key acts for


class NewAPIKey(APIKey):
    key: str  # shown this once


class Health(TypedDict, total=False):
    status: Literal["ok"]
    version: str


# --- errors and pages --------------------------------------------------------


class FieldError(TypedDict):
    field: str  # e.g. "messages[2].role", a query parameter, or "Idempotency-Key"
    message: str


class Page(TypedDict):
    """One page of any list: ``next_cursor`` is ``None`` on the last page."""

    data: List[Any]
    has_more: bool
    next_cursor: Optional[str]
