"""A Python client for Logbook, the durable session, message, checkpoint and
memory store for AI agents.

    from logbook import Client, Problem

    lb = Client()  # $LOGBOOK_URL (default http://127.0.0.1:8080), $LOGBOOK_API_KEY
    s = lb.create_session(agent_id="support-bot")
    lb.append_message(s["id"], role="user", content="Where is my refund?")
    for m in lb.list_messages(s["id"]):
        print(m["seq"], m["role"], m["content"])

Standard library only. See README.md for retries, idempotency keys, pagination,
the live event feed (:mod:`logbook.events`) and the OpenAI Agents SDK session
(:mod:`logbook.openai_agents`).
"""

from .client import DEFAULT_URL, UNSET, AppendResult, Client, Response, new_idempotency_key
from .errors import JobInterrupted, LogbookError, Problem, TransportError
from .events import EVENT_TYPES, Event, EventStream, EventType
from .openai_agents import LogbookSession
from .pagination import Pager
from .stream import LineError, LineResult, StreamWriter

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Response",
    "AppendResult",
    "Pager",
    "Event",
    "EventStream",
    "EventType",
    "EVENT_TYPES",
    "Problem",
    "TransportError",
    "JobInterrupted",
    "LogbookError",
    "LogbookSession",
    "LineError",
    "LineResult",
    "StreamWriter",
    "new_idempotency_key",
    "DEFAULT_URL",
    "UNSET",
    "__version__",
]
