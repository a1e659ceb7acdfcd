"""LogbookSession (the OpenAI Agents SDK session) against a real server."""

from __future__ import annotations

import asyncio
import base64
import copy
import inspect
import json
import unittest
from typing import Any, Dict, List, cast

from logbook import Client, LogbookSession, Problem
from logbook.openai_agents import SessionHistoryError, item_to_message, message_to_items

from .harness import Server

# A realistic Responses history, as the Agents SDK hands it to a session.
TURN: List[Dict[str, Any]] = [
    {"role": "developer", "content": "You are a support bot. Be brief."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Is this receipt for order 1042?"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==", "detail": "high"},
            {"type": "input_image", "file_id": "file-8GbVp4xUz1", "detail": "auto"},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_68a1f0c2e4b08190",
        "summary": [{"type": "summary_text", "text": "The receipt shows order 1042; check its status."}],
        "encrypted_content": "gAAAAABoofDC3x-opaque-payload-Q2FuIHlvdSByZWFkIHRoaXM/==",
    },
    {
        "type": "function_call",
        "id": "fc_68a1f0c3a2d48190",
        "call_id": "call_Vx1d93",
        "name": "lookup_order",
        "arguments": '{"order_id": 1042}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_Vx1d93", "output": '{"status": "delivered", "refundable": true}'},
    {
        "type": "message",
        "id": "msg_68a1f0c5b1c88190",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Yes: order 1042 is refundable.", "annotations": [], "logprobs": []},
        ],
    },
]

HOSTED = {
    "type": "web_search_call",
    "id": "ws_68a1f0c6d2e08190",
    "status": "completed",
    "action": {"type": "search", "query": "refund policy"},
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class SessionTest(unittest.TestCase):
    server: Server
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server().start()
        cls.client = Client(cls.server.url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def session(self, sid: str, **kw: Any) -> LogbookSession:
        return LogbookSession(sid, self.client, **kw)

    def test_it_looks_like_an_sdk_session(self) -> None:
        s = self.session("shape")
        self.assertEqual(s.session_id, "shape")
        self.assertIsNone(s.session_settings)
        for name in ("get_items", "add_items", "pop_item", "clear_session"):
            self.assertTrue(inspect.iscoroutinefunction(getattr(s, name)), name)

    def test_items_round_trip_exactly_and_land_in_typed_fields(self) -> None:
        s = self.session("rt-1", agent_id="support-bot", title="Receipt")
        items = copy.deepcopy(TURN) + [HOSTED]
        run(s.add_items(items[:2]))  # the SDK adds the turn's input first, then what the run made
        run(s.add_items(items[2:]))
        self.assertEqual(run(s.get_items()), items)
        self.assertEqual(items, TURN + [HOSTED], "the caller's items are not changed")

        ses = self.client.get_session("rt-1")
        self.assertEqual((ses["agent_id"], ses["title"], ses["message_count"]), ("support-bot", "Receipt", 7))
        msgs = list(self.client.list_messages("rt-1"))
        self.assertEqual(
            [m["role"] for m in msgs], ["developer", "user", "assistant", "assistant", "tool", "assistant", "assistant"]
        )
        self.assertEqual(msgs[0]["content"], "You are a support bot. Be brief.")
        self.assertEqual(
            msgs[1]["content"],
            [
                {"type": "text", "text": "Is this receipt for order 1042?"},
                {"type": "image", "url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==", "detail": "high"},
                {"type": "image", "detail": "auto", "provider_data": {"file_id": "file-8GbVp4xUz1"}},
            ],
            "an OpenAI file id has no Logbook file: the typed part names it in provider_data",
        )
        self.assertEqual(
            msgs[2]["content"],
            [
                {
                    "type": "reasoning",
                    "summary": ["The receipt shows order 1042; check its status."],
                    "encrypted_content": TURN[2]["encrypted_content"],
                }
            ],
        )
        self.assertEqual(
            msgs[3]["tool_calls"], [{"id": "call_Vx1d93", "name": "lookup_order", "arguments": '{"order_id": 1042}'}]
        )
        self.assertEqual((msgs[4]["tool_call_id"], msgs[4]["content"]), ("call_Vx1d93", TURN[4]["output"]))
        self.assertEqual(msgs[5]["content"], [{"type": "text", "text": "Yes: order 1042 is refundable.", "annotations": []}])
        self.assertEqual((msgs[6]["content"], msgs[6]["provider_item"]), ("", HOSTED))
        self.assertEqual([m["provider_item"] for m in msgs], items)
        self.assertTrue(self.client.resume("rt-1")["validation"]["ok"], "every call has its result")

    def test_limits(self) -> None:
        s = self.session("lim-1")
        run(s.add_items(copy.deepcopy(TURN)))
        run(s.add_items([{"role": "user", "content": "Thanks!"}, {"role": "assistant", "content": "Welcome."}]))
        everything = TURN + [{"role": "user", "content": "Thanks!"}, {"role": "assistant", "content": "Welcome."}]
        self.assertEqual(run(s.get_items(limit=3)), everything[-3:])
        self.assertEqual(run(s.get_items(limit=100)), everything)
        self.assertEqual(run(s.get_items(limit=0)), [])
        self.assertEqual(run(s.get_items(turn_limit=1)), everything[-2:])
        self.assertEqual(run(s.get_items(turn_limit=2)), everything[1:])
        self.assertEqual(run(s.get_items(turn_limit=5)), everything)

        class Settings:
            limit = 2

        self.assertEqual(run(self.session("lim-1", session_settings=Settings()).get_items()), everything[-2:])

    def test_pop_item_and_clear_session(self) -> None:
        s = self.session("pop-1")
        run(s.add_items(copy.deepcopy(TURN)))
        self.assertEqual(run(s.pop_item()), TURN[-1])
        self.assertEqual(run(s.pop_item()), TURN[-2])
        self.assertEqual(run(s.get_items()), TURN[:-2])
        self.assertEqual(self.client.get_session("pop-1")["last_seq"], 4)

        # The SDK re-adds a popped item (e.g. after editing it): it is new, not a rewound replay.
        run(s.add_items([TURN[-2]]))
        self.assertEqual(run(s.get_items()), TURN[:-1])

        run(s.clear_session())
        self.assertEqual(run(s.get_items()), [])
        self.assertIsNone(run(s.pop_item()))
        self.assertEqual(self.client.get_session("pop-1")["last_seq"], 0)
        run(s.add_items([TURN[0]]))
        self.assertEqual(run(s.get_items()), [TURN[0]])

    def test_a_missing_session_is_empty_and_made_on_first_add(self) -> None:
        s = self.session("made-later", metadata={"user": "u1"})
        self.assertEqual(run(s.get_items()), [])
        self.assertIsNone(run(s.pop_item()))
        run(s.clear_session())
        with self.assertRaises(Problem):
            self.client.get_session("made-later")
        run(s.add_items([TURN[0]]))
        self.assertEqual(self.client.get_session("made-later")["metadata"], {"user": "u1"})

    def test_concurrent_pops_never_pop_the_same_item(self) -> None:
        run(self.session("race-1").add_items(copy.deepcopy(TURN)))

        async def both() -> List[Any]:
            return list(await asyncio.gather(self.session("race-1").pop_item(), self.session("race-1").pop_item()))

        popped = run(both())
        self.assertCountEqual([p["type"] if "type" in p else p["role"] for p in popped], ["message", "function_call_output"])
        self.assertEqual(run(self.session("race-1").get_items()), TURN[:-2])

    def test_a_pop_that_loses_the_race_pops_the_item_before(self) -> None:
        run(self.session("race-2").add_items(copy.deepcopy(TURN)))
        slow = LogbookSession("race-2", Client(self.server.url))
        fast = self.session("race-2")
        stale = slow.client.get_context("race-2")
        real = slow.client.get_context
        calls: List[int] = []

        def get_context(*a: Any, **kw: Any) -> Any:
            calls.append(1)
            if len(calls) == 1:  # slow read the history, then fast popped its newest item
                self.assertEqual(fast.pop_item_sync(), TURN[-1])
                return stale
            return real(*a, **kw)

        slow.client.get_context = get_context  # type: ignore[assignment]
        self.assertEqual(run(slow.pop_item()), TURN[-2])
        self.assertEqual(len(calls), 2, "the fenced rewind failed with stale_seq and slow looked again")
        self.assertEqual(run(fast.get_items()), TURN[:-2])

    def test_items_the_server_refuses_as_typed_are_kept_whole(self) -> None:
        s = self.session("odd-1")
        odd: List[Dict[str, Any]] = [
            {"type": "function_call_output", "call_id": "call_never_made", "output": [{"type": "input_text", "text": "late"}]},
            {"type": "function_call", "call_id": "call_bad", "name": "f", "arguments": "{not json"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fine"}]},
        ]
        run(s.add_items(copy.deepcopy(odd)))
        self.assertEqual(run(s.get_items()), odd)
        roles = [m["role"] for m in self.client.list_messages("odd-1")]
        self.assertEqual(roles, ["assistant", "assistant", "user"])

    def test_closed_sessions_refuse(self) -> None:
        s = self.session("closed-1")
        run(s.add_items([TURN[0]]))
        self.client.close_session("closed-1")
        for op in (s.clear_session(), s.pop_item(), s.add_items([TURN[0]])):
            with self.assertRaises(Problem) as cm:
                run(op)
            self.assertEqual(cm.exception.code, "session_closed")

    def test_more_items_than_one_batch(self) -> None:
        s = self.session("many-1")
        items = [{"role": "user" if i % 2 == 0 else "assistant", "content": "m%d" % i} for i in range(1205)]
        run(s.add_items(items))
        got = run(s.get_items())
        # Not assertEqual: its diff of two long lists takes minutes.
        first_bad = next((i for i, (a, b) in enumerate(zip(got, items)) if a != b), None)
        self.assertEqual((len(got), first_bad), (len(items), None))
        self.assertEqual(run(s.get_items(limit=2)), items[-2:])

    def test_history_written_by_other_runtimes_reads_as_items(self) -> None:
        sid = self.client.create_session()["id"]
        self.client.append_messages(
            sid,
            [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "name": "f", "arguments": "{}"}],
                    "provider_item": {"id": "fc_1", "status": "completed"},
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "assistant", "content": [{"type": "reasoning", "summary": []}]},
                {"role": "assistant", "content": [{"type": "text", "text": "done", "annotations": []}]},
            ],
        )
        self.assertEqual(
            run(self.session(sid).get_items()),
            [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "fc_1", "status": "completed"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
                {"type": "reasoning", "summary": []},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done", "annotations": []}]},
            ],
        )


class SmallBodyTest(unittest.TestCase):
    """A server with a small body limit still takes what a legal message
    needs on the message routes: --max-body-bytes is only a floor there."""

    server: Server
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server("--max-body-bytes", "65536").start()
        cls.client = Client(cls.server.url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_large_items_fit(self) -> None:
        s = LogbookSession("big-1", self.client)
        items = [{"role": "user", "content": ("%d " % i) * 3000} for i in range(12)]
        items.append({"role": "user", "content": "x" * 70000})
        run(s.add_items(items))
        self.assertEqual(run(s.get_items()), items)


class _SplittingClient:
    """A client whose server takes at most ``most`` messages a batch (413 past it)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.batches: List[List[Any]] = []

    def append_messages(self, session_id: str, messages: List[Any]) -> None:
        if len(messages) > self.most:
            raise Problem(413, "payload_too_large", "Request Entity Too Large", "too large")
        self.batches.append(list(messages))


class SplitTest(unittest.TestCase):
    """A batch the server finds too large is split until it fits, in order."""

    def test_batches_split_on_413(self) -> None:
        c = _SplittingClient(most=3)
        s = LogbookSession("split", cast(Client, c))
        items = [{"role": "user", "content": str(i)} for i in range(10)]
        s.add_items_sync(items)
        self.assertTrue(all(len(b) <= 3 for b in c.batches), c.batches)
        self.assertEqual([m["content"] for b in c.batches for m in b], [str(i) for i in range(10)])


class MappingTest(unittest.TestCase):
    """The mapping alone, no server."""

    def test_typed_fields(self) -> None:
        m = item_to_message(TURN[3])
        self.assertEqual((m["role"], m["content"], m["provider_item"]), ("assistant", "", TURN[3]))
        self.assertEqual(message_to_items({"role": "assistant", "provider_item": TURN[3]}), [TURN[3]])
        m = item_to_message({"type": "input_file_call", "x": 1})
        self.assertEqual((m["role"], m["content"]), ("assistant", ""))
        with self.assertRaises(TypeError):
            item_to_message(["not", "an", "item"])


if __name__ == "__main__":
    unittest.main()


def user(text: str) -> Dict[str, Any]:
    return {"role": "user", "content": text}


class CapabilitiesTest(unittest.TestCase):
    """The capabilities the TypeScript LogbookSession has, under the same names."""

    server: Server
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server().start()
        cls.client = Client(cls.server.url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_replace_history_with_compaction_is_one_write_that_keeps_the_originals(self) -> None:
        s = LogbookSession("cmp-1", self.client)
        run(s.add_items([user("one"), {"role": "assistant", "content": "two"}]))
        compacted = [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "restated"}]},
            {"type": "compaction", "id": "cmp_x", "encrypted_content": "ENC"},
        ]
        run(s.replace_history_with_compaction(copy.deepcopy(compacted)))
        self.assertEqual(run(s.get_items()), compacted)
        msgs = list(self.client.list_messages("cmp-1"))
        self.assertEqual([m["content"] for m in msgs[:2]], ["one", "two"], "the originals stay in Logbook")
        (c,) = list(self.client.list_compactions("cmp-1"))
        self.assertEqual((c["through_seq"], c["provider_item"]), (2, compacted[1]))
        run(s.add_items([user("three")]))
        self.assertEqual(run(s.get_items()), compacted + [user("three")])
        self.assertEqual(run(s.pop_item()), user("three"))
        self.assertTrue(s.preserve_reasoning_item_ids_for_persistence())
        self.assertEqual(s.prepare_history_items_for_persistence_comparison(compacted), compacted)

    def test_history_transactions_apply_once_and_refuse_a_changed_one(self) -> None:
        s = LogbookSession("tx-1", self.client)
        append = {"type": "append_items", "items": [user("a"), user("b")]}
        run(s.apply_history_transaction("op-1", append))
        run(s.apply_history_transaction("op-1", append))
        self.assertEqual(run(s.get_items()), [user("a"), user("b")], "a repeat appends nothing")
        with self.assertRaises(SessionHistoryError):
            run(s.apply_history_transaction("op-1", {"type": "append_items", "items": [user("c")]}))
        replace = {"type": "replace_suffix", "expected_suffix": [user("b")], "replacement": [user("b2"), user("c")]}
        run(s.apply_history_transaction("op-2", replace))
        # Repeated by another process after the answer was lost: applied already.
        run(LogbookSession("tx-1", self.client).apply_history_transaction("op-2", replace))
        self.assertEqual(run(s.get_items()), [user("a"), user("b2"), user("c")])
        with self.assertRaisesRegex(SessionHistoryError, "no longer matches"):
            run(s.apply_history_transaction("op-3", {"type": "replace_suffix", "expected_suffix": [user("b")], "replacement": []}))
        with self.assertRaises(SessionHistoryError):
            run(s.apply_history_transaction(" ", append))

    def test_history_mutations_replace_a_function_call(self) -> None:
        s = LogbookSession("mut-1", self.client)
        call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x":1}'}
        result = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
        run(s.add_items([user("go"), call, result]))
        fixed = dict(call, arguments='{"x":2}')
        for _ in range(2):
            run(s.apply_history_mutations([{"type": "replace_function_call", "call_id": "c1", "replacement": fixed}]))
        self.assertEqual(run(s.get_items()), [user("go"), fixed, result])
        self.assertTrue(self.client.resume("mut-1")["validation"]["ok"])

    def test_a_2mb_image_is_kept_once_and_comes_back_whole(self) -> None:
        s = LogbookSession("img-1", self.client)
        image = "data:image/png;base64," + base64.b64encode(b"\x5a" * 2_000_000).decode()
        item = {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": image, "detail": "high"}]}
        run(s.add_items([copy.deepcopy(item)]))
        self.assertEqual(run(s.get_items()), [item])
        (m,) = list(self.client.list_messages("img-1"))
        self.assertNotIn(image[30:80], json.dumps(m["provider_item"]), "provider_item holds no base64")
        self.assertEqual(m["content"][0]["url"], image)

    def test_client_ids_forks_and_compactions_with_messages(self) -> None:
        lb = self.client
        sid = lb.create_session()["id"]
        lb.append_messages(sid, [{"role": "user", "content": "hi", "client_id": "u1"}, {"role": "assistant", "content": "yo", "client_id": "a1"}])
        self.assertEqual(lb.get_message_by_client_id(sid, "a1")["seq"], 2)
        fork = lb.fork_session(sid, id=sid + "-b", at_seq=1)
        self.assertEqual((fork["id"], fork["parent_id"]), (sid + "-b", sid))
        r = lb.rewind(sid, from_client_id="a1", expected_last_seq=2, messages=[{"role": "assistant", "content": "hello", "client_id": "a1"}])
        self.assertEqual([m["content"] for m in r["messages"]], ["hello"])
        c = lb.create_compaction(sid, 2, "a summary", expected_last_seq=2, messages=[{"role": "user", "content": "next"}])
        self.assertEqual([m["seq"] for m in c["messages"]], [3])
        with self.assertRaises(Problem) as cm:
            lb.get_message_by_client_id(sid, "nope")
        self.assertEqual(cm.exception.code, "not_found")
