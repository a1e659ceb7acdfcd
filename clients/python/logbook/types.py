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
PartType = Literal["text", "image", "file", "reasoning", "refusal", "data", "json"]


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
    name: str  # a data part's
    value: JSON  # a data or json part's, any JSON value
    provider_data: Dict[str, JSON]


Content = Union[str, List[Part]]
"""A string, or a list of at most 128 parts."""


class _ToolCallBase(TypedDict):
    id: str
    name: str
    arguments: str  # a string holding JSON, as OpenAI sends it


class ToolCall(_ToolCallBase, total=False):
    """One function call of an assistant message."""

    client_side: bool  # the client runs it; absent when false
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
    client_id: Optional[str]
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

    client_id: Optional[str]
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


class _CompactionBase(TypedDict):
    id: str
    session_id: str
    through_seq: int
    summary: Content
    tokens: int
    model: Optional[str]
    provider_item: Optional[Dict[str, JSON]]
    created_at: str


class Compaction(_CompactionBase, total=False):
    messages: List[Message]  # only in a create's answer, when it appended some


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


class PendingWrite(TypedDict):
    """One task's write, recorded against a checkpoint."""

    task_id: str
    idx: int
    channel: str
    value: JSON
    task_path: str


class _CheckpointBase(TypedDict):
    id: str
    session_id: str
    namespace: str
    iteration: int
    client_id: str
    parent_id: Optional[str]
    parent_iteration: Optional[int]
    metadata: Dict[str, JSON]
    last_seq: int
    sha256: str
    created_at: str


class Checkpoint(_CheckpointBase, total=False):
    """A checkpoint; ``state`` and ``pending_writes`` are left out of a list
    read with ``values=False`` and of a graph write's answer."""

    state: Dict[str, JSON]
    pending_writes: List[PendingWrite]
    parent_writes: List[PendingWrite]


class CheckpointRetention(TypedDict, total=False):
    """A retention policy: ``{"keep": "all"}``, ``{"keep": "last", "last": N}``
    or ``{"keep": "younger_than", "max_age_seconds": S}``; ``default`` is true
    when it is the server's."""

    keep: Literal["all", "last", "younger_than"]
    last: int
    max_age_seconds: int
    default: bool


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


# --- the item store ------------------------------------------------------------

EmbeddingState = Literal["pending", "ready", "failed"]


class Item(TypedDict):
    """One entry of the item store: a JSON object under a namespace and a key,
    in the tenant's shared space (``user_id`` ``None``) or one end user's."""

    namespace: List[str]
    key: str
    value: Dict[str, JSON]
    user_id: Optional[str]
    version: int
    index: Optional[List[str]]
    embedding_state: Optional[EmbeddingState]
    embedding_error: Optional[str]
    created_at: str
    updated_at: str
    expires_at: Optional[str]
    ttl_seconds: Optional[int]


class ItemHit(Item):
    """An item a search found; ``score`` is the best cosine similarity of the
    query with one of its embedded texts (``None`` without a query)."""

    score: Optional[float]


class ItemPage(TypedDict):
    data: List[ItemHit]
    has_more: bool
    next_cursor: Optional[str]


class NamespacePage(TypedDict):
    data: List[List[str]]
    has_more: bool


class ItemResult(TypedDict, total=False):
    """One batch operation's result: the keys of its ``op`` only."""

    op: Literal["get", "put", "delete", "search", "list_namespaces"]
    item: Optional[Item]
    deleted: bool
    items: List[ItemHit]
    has_more: bool
    next_cursor: Optional[str]
    namespaces: List[List[str]]


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


class JobProgress(TypedDict):
    """How far a job has got: ``done`` of ``total`` (``None`` when not known)
    units of its ``phase``."""

    phase: str
    done: int
    total: Optional[int]


class JobError(TypedDict):
    """Why a job failed: the problem its route would have answered."""

    status: int
    code: str
    detail: str


class Job(TypedDict):
    """A purge, an integrity check or a backup that outlasted its route's wait
    (``GET /v1/admin/jobs/{id}``). ``result`` is the route's usual answer once
    ``state`` is ``succeeded``; ``error`` says why once it is ``failed``."""

    id: str
    kind: Literal["purge", "integrity", "backup"]
    state: Literal["running", "succeeded", "failed", "interrupted"]
    progress: JobProgress
    result: Optional[Dict[str, JSON]]
    error: Optional[JobError]
    created_at: str
    updated_at: str
    finished_at: Optional[str]


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


# --- search by meaning, retention, administration ------------------------------

PassageSearchMode = Literal["keyword", "vector", "hybrid"]
"""How a search ranks: by words, by meaning (embeddings), or both."""


class MessageEmbedding(TypedDict):
    """A message's embedding state (the vector itself is not sent back)."""

    session_id: str
    message_id: str
    seq: int
    agent_id: Optional[str]
    embedding_model: Optional[str]
    embedding_state: EmbeddingState
    embedding_error: Optional[str]
    dimensions: Optional[int]


class EmbeddingConfig(TypedDict, total=False):
    """An embedding endpoint (OpenAI's API shape): ``url`` and ``model``
    required; ``api_key_env`` names the server's environment variable that
    holds its key (the key itself is never sent)."""

    url: str
    model: str
    dimensions: int
    api_key_env: str


class TenantEmbedding(TypedDict):
    """The tenant's embedding endpoint; ``None`` when it has none."""

    embedding: Optional[EmbeddingConfig]


class RetentionPolicy(TypedDict, total=False):
    """A session's checkpoint retention: ``keep`` all, the ``last`` N, or
    those younger than ``max_age_seconds``."""

    keep: Literal["all", "last", "younger_than"]
    last: int
    max_age_seconds: int


class Identity(TypedDict):
    """Who a key acts as (``GET /v1/whoami``)."""

    tenant: str
    scope: Scope
    user_id: Optional[str]
    key_id: Optional[str]
    open_mode: bool


ItemsImportResult = Dict[str, JSON]
Usage = Dict[str, JSON]
PurgeResult = Dict[str, JSON]
IntegrityReport = Dict[str, JSON]
Backup = Dict[str, JSON]
