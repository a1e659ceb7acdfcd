"""The client against a real Logbook server (built from this repository)."""

from __future__ import annotations

import os
import time
import unittest
from typing import Any, List, Tuple
from unittest import mock

from logbook import Client, Problem, TransportError
from logbook.client import Response

from .harness import FaultProxy, Server, free_port


class ServerTestCase(unittest.TestCase):
    """One server for the class; each test makes its own sessions."""

    server: Server
    client: Client
    flags: Tuple[str, ...] = ()

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(*cls.flags).start()
        cls.client = Client(cls.server.url, api_key="")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()


class AgentTurnTest(ServerTestCase):
    def test_a_whole_agent_turn_then_resume(self) -> None:
        lb = self.client
        s = lb.create_session(agent_id="support-bot", title="Refund question", metadata={"channel": "web"})
        sid = s["id"]
        self.assertTrue(sid.startswith("ses_") and len(sid) == 36, sid)
        self.assertEqual((s["status"], s["last_seq"], s["metadata"]), ("created", 0, {"channel": "web"}))

        user = lb.append_message(sid, role="user", content="Can I get a refund for order 1042?", tokens=12)
        call = lb.append_message(
            sid,
            {
                "role": "assistant",
                "content": "",
                "model": "gpt-4o",
                "tokens": 40,
                "cost": 0.0004,
                "tool_calls": [{"id": "call_1", "name": "lookup_order", "arguments": '{"order_id": 1042}'}],
            },
        )
        self.assertEqual((user["seq"], call["seq"]), (1, 2))
        self.assertEqual(call["tool_calls"], [{"id": "call_1", "name": "lookup_order", "arguments": '{"order_id": 1042}'}])

        ck = lb.put_checkpoint(
            sid,
            1,
            {"pending_tool_calls": [{"id": "call_1", "tool_name": "lookup_order", "tool_input": {"order_id": 1042}}]},
            expected_iteration=0,
        )
        self.assertEqual((ck["iteration"], ck["last_seq"]), (1, 2))

        tool = lb.append_message(
            sid, role="tool", tool_call_id="call_1", name="lookup_order", content='{"status": "delivered", "refundable": true}'
        )
        reply = lb.append_message(sid, role="assistant", content="Yes: order 1042 is refundable.", tokens=25, cost=0.0003)
        self.assertEqual((tool["seq"], reply["seq"]), (3, 4))
        ck2 = lb.patch_checkpoint(sid, 2, {"pending_tool_calls": None, "stop_reason": "end_turn"}, expected_iteration=1)
        self.assertEqual(ck2["state"], {"stop_reason": "end_turn"})

        # A second worker whose fence is stale loses.
        with self.assertRaises(Problem) as cm:
            lb.put_checkpoint(sid, 2, {"x": 1}, expected_iteration=1)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.latest_iteration), (409, "stale_iteration", 2))

        # A new worker takes over.
        r = lb.resume(sid)
        self.assertTrue(r["validation"]["ok"], r["validation"])
        assert r["checkpoint"] is not None
        self.assertEqual(r["checkpoint"]["iteration"], 2)
        self.assertEqual(r["pending_tool_calls"], [])
        self.assertEqual(r["messages_since_checkpoint"], [])
        got = lb.get_session(sid)
        self.assertEqual((got["status"], got["message_count"], got["last_seq"], got["total_tokens"]), ("active", 4, 4, 77))
        self.assertAlmostEqual(got["total_cost"], 0.0007)
        self.assertEqual([m["role"] for m in lb.list_messages(sid)], ["user", "assistant", "tool", "assistant"])
        self.assertEqual(lb.get_message(sid, tool["id"])["tool_call_id"], "call_1")

        # The conversation is searchable once the indexer catches up.
        deadline = time.monotonic() + 10
        while True:
            found = lb.search_messages("delivered", session_id=sid)
            if found["data"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual([(h["seq"], h["role"]) for h in found["data"]], [(3, "tool")])

        closed = lb.close_session(sid)
        self.assertEqual(closed["status"], "completed")
        with self.assertRaises(Problem) as cm:
            lb.append_message(sid, role="user", content="one more thing")
        self.assertEqual(cm.exception.code, "session_closed")

    def test_resume_reports_an_unanswered_call_and_repair_fixes_it(self) -> None:
        lb = self.client
        sid = lb.create_session()["id"]
        lb.append_messages(
            sid,
            [
                {"role": "user", "content": "look it up"},
                {"role": "assistant", "tool_calls": [{"id": "c9", "name": "lookup", "arguments": "{}"}]},
            ],
        )
        r = lb.resume(sid)
        self.assertFalse(r["validation"]["ok"])
        self.assertEqual([p["code"] for p in r["validation"]["problems"]], ["unanswered_tool_call"])
        fixed = lb.repair(sid, expected_last_seq=2)
        self.assertEqual([m["tool_call_id"] for m in fixed["messages"]], ["c9"])
        self.assertTrue(lb.resume(sid)["validation"]["ok"])

    def test_rewind_and_fork(self) -> None:
        lb = self.client
        sid = lb.create_session()["id"]
        lb.append_messages(sid, [{"role": "user", "content": str(i)} for i in range(5)])
        fork = lb.fork_session(sid, at_seq=3, id=sid + "-fork")
        self.assertEqual((fork["parent_id"], fork["last_seq"]), (sid, 3))
        r = lb.rewind(sid, 2, expected_last_seq=5, messages=[{"role": "assistant", "content": "new tail"}])
        self.assertEqual((r["removed_messages"], r["session"]["last_seq"]), (3, 3))
        with self.assertRaises(Problem) as cm:
            lb.rewind(sid, 1, expected_last_seq=5)
        self.assertEqual((cm.exception.code, cm.exception.last_seq), ("stale_seq", 3))
        self.assertEqual([m["content"] for m in lb.list_messages(fork["id"])], ["0", "1", "2"])


class GraphCheckpointTest(ServerTestCase):
    def test_a_graph_runtimes_checkpoints(self) -> None:
        lb = self.client
        tid = "py-graph-thread"
        root = lb.create_checkpoint(tid, client_id="a", state_patch={"x": 1}, metadata={"source": "input"}, create_session=True)
        child = lb.create_checkpoint(tid, client_id="b", parent_id="a", state_patch={"y": 2}, metadata={"source": "loop"})
        self.assertEqual((root["iteration"], child["iteration"], child["parent_id"]), (1, 2, "a"))
        lb.put_checkpoint_writes(tid, "b", "task-1", [("out", "v"), ("__interrupt__", "stop")])
        got = lb.find_checkpoint(tid, client_id="b")
        self.assertEqual(got["state"], {"x": 1, "y": 2})
        self.assertEqual([(w["idx"], w["channel"]) for w in got["pending_writes"]], [(-3, "__interrupt__"), (0, "out")])
        self.assertEqual([c["client_id"] for c in lb.list_checkpoints(tid, metadata={"source": "loop"})], ["b"])
        self.assertEqual([c["client_id"] for c in lb.list_all_checkpoints(session_id=tid, before="b")], ["a"])
        self.assertNotIn("state", next(iter(lb.list_checkpoints(tid, values=False))))
        self.assertEqual(lb.set_checkpoint_retention(tid, {"keep": "all"})["keep"], "all")
        self.assertTrue(lb.set_checkpoint_retention(tid, None)["default"])
        fork = lb.fork_session(tid, at_checkpoint={"client_id": "a"}, id=tid + "-fork")
        self.assertEqual(lb.find_checkpoint(fork["id"])["client_id"], "a")
        lb.purge_session(tid)
        with self.assertRaises(Problem) as e:
            lb.get_session(tid)
        self.assertEqual(e.exception.status, 404)


class ProblemTest(ServerTestCase):
    def test_unknown_session_is_not_found(self) -> None:
        with self.assertRaises(Problem) as cm:
            self.client.get_session("no-such-session")
        p = cm.exception
        self.assertIsInstance(p, Exception)
        self.assertEqual((p.status, p.code, p.title), (404, "not_found", "Not Found"))
        self.assertIn("no-such-session", p.detail)
        self.assertTrue(p.request_id)
        self.assertIn("not_found", str(p))

    def test_invalid_field_is_named(self) -> None:
        sid = self.client.create_session()["id"]
        with self.assertRaises(Problem) as cm:
            self.client.append_message(sid, role="tool", content="a result of nothing")
        self.assertEqual((cm.exception.status, cm.exception.code), (422, "validation_failed"))
        self.assertIn("tool_call_id", cm.exception.fields)

        with self.assertRaises(Problem) as cm:
            self.client.append_messages(sid, [{"role": "user", "content": "ok"}, {"role": "robot", "content": "no"}])  # type: ignore[typeddict-item]
        self.assertIn("messages[1].role", cm.exception.fields)
        self.assertEqual(self.client.get_session(sid)["last_seq"], 0, "a refused batch writes nothing")

    def test_bad_query_and_unknown_call(self) -> None:
        sid = self.client.create_session()["id"]
        with self.assertRaises(Problem) as cm:
            self.client.list_messages(sid, limit=500).first_page()
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_query"))
        self.assertIn("limit", cm.exception.fields)
        with self.assertRaises(Problem) as cm:
            self.client.append_message(sid, role="tool", tool_call_id="call_x", content="?")
        self.assertEqual((cm.exception.code, list(cm.exception.fields)), ("unknown_tool_call", ["tool_call_id"]))

    def test_taken_id_is_conflict(self) -> None:
        sid = self.client.create_session()["id"]
        with self.assertRaises(Problem) as cm:
            self.client.create_session(sid)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))


class PaginationTest(ServerTestCase):
    def _count_requests(self) -> List[str]:
        calls: List[str] = []
        real = self.client._send_once

        def counting(method: str, url: str, data: Any, headers: Any) -> Response:
            calls.append(method + " " + url)
            return real(method, url, data, headers)

        patcher = mock.patch.object(self.client, "_send_once", counting)
        patcher.start()
        self.addCleanup(patcher.stop)
        return calls

    def test_iterating_follows_the_cursor_lazily(self) -> None:
        sid = self.client.create_session()["id"]
        self.client.append_messages(sid, [{"role": "user", "content": "m%d" % i} for i in range(1, 26)])
        calls = self._count_requests()

        pager = self.client.list_messages(sid, limit=10)
        self.assertEqual(calls, [], "nothing is fetched before iterating")
        first = next(iter(pager))
        self.assertEqual((first["seq"], len(calls)), (1, 1))

        calls.clear()
        seqs = [m["seq"] for m in pager]
        self.assertEqual(seqs, list(range(1, 26)))
        self.assertEqual(len(calls), 3, calls)
        self.assertIn("cursor=", calls[1])

        pages = list(self.client.list_messages(sid, limit=10, order="desc").pages())
        self.assertEqual([len(p["data"]) for p in pages], [10, 10, 5])
        self.assertEqual((pages[0]["has_more"], pages[-1]["has_more"], pages[-1]["next_cursor"]), (True, False, None))
        self.assertEqual(pages[0]["data"][0]["seq"], 25)

        calls.clear()
        self.assertEqual(len(self.client.list_messages(sid, limit=10).to_list(limit=12)), 12)
        self.assertEqual(len(calls), 2, "stops at the page that holds the 12th")

        first_page = self.client.list_messages(sid, limit=20).first_page()
        rest = list(self.client.list_messages(sid, limit=20, cursor=first_page["next_cursor"]))
        self.assertEqual([m["seq"] for m in rest], list(range(21, 26)))

    def test_sessions_by_metadata_over_pages(self) -> None:
        tag = "run-%d" % time.monotonic_ns()
        made = [self.client.create_session(metadata={"run": tag, "n": i})["id"] for i in range(5)]
        got = [s["id"] for s in self.client.list_sessions(metadata={"run": tag}, limit=2)]
        self.assertEqual(got, made[::-1], "newest first, every page")
        one = list(self.client.list_sessions(metadata={"run": tag, "n": 3}))
        self.assertEqual([s["id"] for s in one], [made[3]])


class IdempotencyTest(ServerTestCase):
    def test_the_same_key_replays_and_writes_nothing(self) -> None:
        sid = self.client.create_session()["id"]
        msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        a = self.client.append_messages(sid, msgs, idempotency_key="turn-1")
        b = self.client.append_messages(sid, msgs, idempotency_key="turn-1")
        self.assertFalse(a.replayed)
        self.assertTrue(b.replayed)
        self.assertEqual([m["id"] for m in a.messages], [m["id"] for m in b.messages])
        self.assertEqual(self.client.get_session(sid)["message_count"], 2)

        with self.assertRaises(Problem) as cm:
            self.client.append_messages(sid, [{"role": "user", "content": "other"}], idempotency_key="turn-1")
        self.assertEqual(cm.exception.code, "idempotency_conflict")

    def test_batches_are_fenced_by_expected_last_seq(self) -> None:
        sid = self.client.create_session()["id"]
        r = self.client.append_messages(sid, [{"role": "user", "content": "a"}], expected_last_seq=0)
        self.assertEqual([m["seq"] for m in r.messages], [1])
        with self.assertRaises(Problem) as cm:
            self.client.append_messages(sid, [{"role": "user", "content": "b"}], expected_last_seq=0)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.last_seq), (409, "stale_seq", 1))
        r = self.client.append_messages(sid, [{"role": "user", "content": "b"}, {"role": "user", "content": "c"}], expected_last_seq=1)
        self.assertEqual([m["seq"] for m in r.messages], [2, 3])
        # A single message in a batch is still answered as a batch.
        self.assertEqual(len(self.client.append_messages(sid, [{"role": "user", "content": "d"}]).messages), 1)

    def test_each_call_gets_a_fresh_key(self) -> None:
        sid = self.client.create_session()["id"]
        a = self.client.append_messages(sid, [{"role": "user", "content": "same"}])
        b = self.client.append_messages(sid, [{"role": "user", "content": "same"}])
        self.assertNotEqual(a.idempotency_key, b.idempotency_key)
        self.assertEqual(self.client.get_session(sid)["message_count"], 2)


class RetryTest(ServerTestCase):
    """Faults between the client and a real server, from a proxy."""

    def setUp(self) -> None:
        self.proxy = FaultProxy(self.server.url)
        self.addCleanup(self.proxy.close)
        self.sleeps: List[float] = []
        self.lb = Client(self.proxy.url, api_key="", backoff=0.01, max_retries=3)
        self.lb._sleep = self.sleeps.append  # record the waits instead of waiting

    def test_a_lost_answer_is_retried_with_the_same_key(self) -> None:
        sid = self.lb.create_session()["id"]
        self.proxy.fault("POST", "/messages", ("drop", 0, None))
        r = self.lb.append_messages(sid, [{"role": "user", "content": "once"}, {"role": "assistant", "content": "only"}])
        self.assertEqual((r.attempts, r.replayed), (2, True))
        keys = [h["Idempotency-Key"] for h in self.proxy.requests("POST", "/messages/batch")]
        self.assertEqual(keys, [r.idempotency_key] * 2, "both attempts went to the batch route")
        stored = list(self.client.list_messages(sid))
        self.assertEqual([m["content"] for m in stored], ["once", "only"], "stored once")
        self.assertEqual([m["id"] for m in stored], [m["id"] for m in r.messages], "the replay answers what was stored")

        self.proxy.fault("POST", "/messages", ("drop", 0, None))
        m = self.lb.append_message(sid, role="user", content="single")
        self.assertEqual(m["seq"], 3)
        self.assertEqual(self.client.get_session(sid)["message_count"], 3)

    def test_503_and_429_are_retried_after_retry_after(self) -> None:
        sid = self.lb.create_session()["id"]
        self.proxy.fault("POST", "/messages", ("status", 503, "2"))
        self.proxy.fault("POST", "/messages", ("status", 429, "1"))
        r = self.lb.append_messages(sid, [{"role": "user", "content": "x"}])
        self.assertEqual((r.attempts, r.replayed, self.sleeps), (3, False, [2.0, 1.0]))
        keys = {h["Idempotency-Key"] for h in self.proxy.requests("POST", "/messages")}
        self.assertEqual(keys, {r.idempotency_key})

        self.proxy.fault("GET", "/v1/sessions/", ("status", 503, None))  # no Retry-After: backoff
        self.assertEqual(self.lb.get_session(sid)["message_count"], 1)
        self.assertEqual(len(self.sleeps), 3)
        self.assertLess(self.sleeps[-1], 0.02)

    def test_retries_are_capped(self) -> None:
        for _ in range(4):
            self.proxy.fault("GET", "/readyz", ("status", 503, "0"))
        with self.assertRaises(Problem) as cm:
            self.lb.readyz()
        self.assertEqual((cm.exception.status, cm.exception.code, len(self.sleeps)), (503, "storage_unavailable", 3))

    def test_other_4xx_are_never_retried(self) -> None:
        sid = self.lb.create_session()["id"]
        with self.assertRaises(Problem):
            self.lb.append_message(sid, role="user", content="x", tokens=-1)
        self.assertEqual(len(self.proxy.requests("POST", "/messages")), 1)
        self.assertEqual(self.sleeps, [])

    def test_a_lost_create_returns_the_session_it_made(self) -> None:
        self.proxy.fault("POST", "/v1/sessions", ("drop", 0, None))
        s = self.lb.create_session(title="made once", metadata={"k": 1})
        self.assertEqual(len(self.proxy.requests("POST", "/v1/sessions")), 2)
        self.assertEqual(self.client.get_session(s["id"])["title"], "made once")

    def test_a_lost_checkpoint_write_returns_the_checkpoint(self) -> None:
        sid = self.lb.create_session()["id"]
        self.proxy.fault("PUT", "/checkpoint", ("drop", 0, None))
        c = self.lb.put_checkpoint(sid, 1, {"step": "one"}, expected_iteration=0)
        self.assertEqual((c["iteration"], c["state"]), (1, {"step": "one"}))

    def test_a_lost_fenced_rewind_is_resent_under_its_key(self) -> None:
        sid = self.lb.create_session()["id"]
        self.lb.append_messages(sid, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
        self.proxy.fault("POST", "/rewind", ("drop", 0, None))
        r = self.lb.rewind(sid, 1, expected_last_seq=2, messages=[{"role": "user", "content": "c"}])
        self.assertEqual(r["session"]["last_seq"], 2)
        keys = [h.get("Idempotency-Key") for h in self.proxy.requests("POST", "/rewind")]
        self.assertEqual(len(keys), 2)
        self.assertTrue(keys[0] and keys[0] == keys[1], "one key the client made, the same on the resend")
        self.assertEqual(self.client.get_session(sid)["last_seq"], 2, "applied once")

    def test_a_key_in_flight_is_waited_for(self) -> None:
        sid = self.lb.create_session()["id"]
        self.lb.append_message(sid, role="user", content="a")
        self.proxy.fault("POST", "/compactions", ("status", 409, None, "idempotency_in_progress"))
        c = self.lb.create_compaction(sid, 1, "a summary")
        self.assertEqual(c["through_seq"], 1)
        self.assertEqual(len(self.proxy.requests("POST", "/compactions")), 2)

    def test_a_refused_connection_is_retried_then_reported(self) -> None:
        lb = Client("http://127.0.0.1:%d" % free_port(), backoff=0.01, max_retries=2)
        lb._sleep = self.sleeps.append
        with self.assertRaises(TransportError) as cm:
            lb.append_message("s", role="user", content="x")
        self.assertFalse(cm.exception.maybe_applied)
        self.assertTrue((cm.exception.idempotency_key or "").startswith("lbpy-"), "the key to resend with")
        self.assertEqual(len(self.sleeps), 2)


class RateLimitTest(ServerTestCase):
    flags = ("--rate-limit", "2")

    def test_a_real_429_carries_retry_after_and_is_waited_out(self) -> None:
        impatient = Client(self.server.url, max_retries=0)
        with self.assertRaises(Problem) as cm:
            for _ in range(20):
                impatient.list_sessions(limit=1).first_page()
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.retry_after), (429, "rate_limited", 1.0))

        patient = Client(self.server.url, max_retries=5)
        waits: List[float] = []

        def wait(d: float) -> None:
            waits.append(d)
            time.sleep(d)

        patient._sleep = wait
        sid = patient.create_session()["id"]
        for i in range(2):  # three requests in a few milliseconds: past 2 a second, whatever the window
            patient.append_message(sid, role="user", content=str(i))
        self.assertGreaterEqual(len(waits), 1)
        self.assertEqual(set(waits), {1.0}, "waited as Retry-After said")


class MemoryAndFilesTest(ServerTestCase):
    def test_agents_blocks_archival_and_tools(self) -> None:
        lb = self.client
        agent = lb.create_agent("Support bot", model="gpt-4o", tags=["prod"])
        aid = agent["id"]
        self.assertTrue(aid.startswith("agt_"), aid)
        self.assertEqual([a["id"] for a in lb.list_agents(tag="prod")], [aid])

        b = lb.put_block(aid, "human", "Name: Ann", limit=2000)
        self.assertEqual((b["value"], b["version"]), ("Name: Ann", 1))
        b = lb.put_block(aid, "human", "Name: Ann Lee", if_match=b["version"])
        with self.assertRaises(Problem) as cm:
            lb.put_block(aid, "human", "lost update", if_match=1)
        self.assertEqual((cm.exception.status, cm.exception.code), (412, "precondition_failed"))
        b = lb.append_block(aid, "human", "Prefers email")
        b = lb.replace_block(aid, "human", "email", "phone calls")
        self.assertEqual(b["value"], "Name: Ann Lee\nPrefers phone calls")
        self.assertEqual([v["version"] for v in lb.block_history(aid, "human", limit=2)], [4, 3, 2, 1])
        self.assertEqual([x["label"] for x in lb.list_blocks(aid)], ["human"])

        sleeper = lb.create_agent("Support bot, sleep-time")["id"]
        s = lb.attach_block(sleeper, aid, "human", as_label="user")
        self.assertEqual((s["owner_agent_id"], s["owner_label"], s["version"]), (aid, "human", 4))
        lb.append_block(sleeper, "user", "Asked about refunds")
        b = lb.get_block(aid, "human")
        self.assertEqual((b["version"], b["shared_with"]), (5, [{"agent_id": sleeper, "label": "user"}]))
        with self.assertRaises(Problem) as cm:
            lb.attach_block(sleeper, aid, "human", as_label="user2")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "already_attached"))
        lb.detach_block(sleeper, "user")
        self.assertEqual(lb.list_blocks(sleeper), [])
        lb.replace_block(aid, "human", "\nAsked about refunds", "")

        p = lb.insert_passage(aid, "Ann was refunded for order 1042.", tags=["billing"])
        hits = lb.search_archival(aid, "refund order", tags=["billing"], limit=5)["data"]
        self.assertEqual([h["id"] for h in hits], [p["id"]])
        self.assertEqual([x["id"] for x in lb.list_passages(aid)], [p["id"]])

        self.assertIn("core_memory_append", [t["name"] for t in lb.list_tools()])
        r = lb.call_tool(aid, "core_memory_append", '{"label": "human", "content": "Lives in Oslo"}')
        self.assertEqual(r, {"result": "None", "is_error": False})
        r = lb.call_tool(aid, "core_memory_replace", {"label": "nope", "old_content": "x"})
        self.assertTrue(r["is_error"], r)

        lb.delete_passage(aid, p["id"])
        lb.delete_agent(aid)
        with self.assertRaises(Problem) as cm:
            lb.get_agent(aid)
        self.assertEqual(cm.exception.code, "not_found")

    def test_files_in_parts_and_session_updates(self) -> None:
        lb = self.client
        png = b"\x89PNG\r\n\x1a\n a receipt"
        f = lb.upload_file(png, "image/png")
        self.assertEqual(lb.upload_file(png, "image/png")["id"], f["id"], "the same bytes are the same file")
        self.assertEqual(lb.download_file(f["id"]), png)
        sid = lb.create_session(title="files")["id"]
        m = lb.append_message(
            sid,
            role="user",
            content=[{"type": "text", "text": "Is this it?"}, {"type": "image", "file_id": f["id"], "detail": "high"}],
        )
        self.assertEqual(m["content"][1], {"type": "image", "file_id": f["id"], "detail": "high"})

        s = lb.update_session(sid, metadata={"a": 1, "b": 2})
        s = lb.update_session(sid, metadata={"a": None})  # a merge patch: title untouched
        self.assertEqual((s["title"], s["metadata"]), ("files", {"b": 2}))
        s = lb.update_session(sid, title=None, status="completed")
        self.assertEqual((s["title"], s["status"]), (None, "completed"))
        self.assertEqual(lb.update_session(sid, status="active")["status"], "active")
        with self.assertRaises(Problem) as cm:
            lb.update_session(sid, status="created")
        self.assertEqual(cm.exception.code, "invalid_transition")


class AuthTest(ServerTestCase):
    def test_keys(self) -> None:
        open_client = self.client
        sid = open_client.create_session()["id"]  # open mode: no key yet
        key = self.server.cli("keys", "create", "--tenant", "default", "--scope", "admin", "--name", "py")
        self.assertTrue(key.startswith("lb_"), key)

        # The server rechecks for a key made outside it at most once a second.
        deadline = time.monotonic() + 5
        with self.assertRaises(Problem) as cm:
            while time.monotonic() < deadline:
                open_client.get_session(sid)
                time.sleep(0.1)
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))

        admin = Client(self.server.url, api_key=key)
        self.assertEqual(admin.get_session(sid)["id"], sid)

        with mock.patch.dict(os.environ, {"LOGBOOK_URL": self.server.url, "LOGBOOK_API_KEY": key}):
            from_env = Client()
        self.assertEqual(from_env.get_session(sid)["id"], sid)

        read_key = admin.create_key("read", name="dashboard")["key"]
        reader = Client(self.server.url, api_key=read_key)
        self.assertEqual(reader.get_session(sid)["id"], sid)
        with self.assertRaises(Problem) as cm:
            reader.append_message(sid, role="user", content="x")
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))


if __name__ == "__main__":
    unittest.main()


class ItemsTest(ServerTestCase):
    def test_items_put_get_search_batch_delete(self) -> None:
        lb = self.client
        ns = ["py-test", "memories"]
        it = lb.put_item(ns, "food/fav", {"text": "ramen", "stars": 5}, index=["text"], user_id="ada")
        self.assertEqual((it["version"], it["key"], it["user_id"], it["index"]), (1, "food/fav", "ada", ["text"]))
        with self.assertRaises(Problem) as cm:
            lb.get_item(ns, "food/fav")
        self.assertEqual(cm.exception.code, "not_found")
        self.assertEqual(lb.get_item(ns, "food/fav", user_id="ada")["value"], {"text": "ramen", "stars": 5})
        with self.assertRaises(Problem) as cm:
            lb.put_item(ns, "food/fav", {}, user_id="ada", if_version=9)
        self.assertEqual((cm.exception.status, cm.exception.code), (412, "precondition_failed"))
        lb.put_item(ns, "pet", {"text": "a dog", "stars": 2}, user_id="ada")

        page = lb.search_items(["py-test"], filter={"stars": {"$gte": 3}}, user_id="ada")
        self.assertEqual([h["key"] for h in page["data"]], ["food/fav"])
        self.assertIsNone(page["data"][0]["score"])
        names = lb.list_item_namespaces(prefix=["py-test"], user_id="ada")
        self.assertEqual(names["data"], [ns])

        res = lb.item_batch(
            [
                {"op": "get", "namespace": ns, "key": "pet"},
                {"op": "delete", "namespace": ns, "key": "pet"},
                {"op": "search", "namespace_prefix": ns},
            ],
            user_id="ada",
        )
        self.assertEqual([r["op"] for r in res], ["get", "delete", "search"])
        self.assertEqual((res[0]["item"]["key"], res[1]["deleted"], len(res[2]["items"])), ("pet", True, 2))

        lines = list(lb.export_items(namespace_prefix=["py-test"], user_id="ada"))
        self.assertEqual([l["type"] for l in lines], ["header", "item", "items_end"])
        lb.delete_item(ns, "food/fav", user_id="ada", if_version=1)
        with self.assertRaises(Problem) as cm:
            lb.delete_item(ns, "food/fav", user_id="ada")
        self.assertEqual(cm.exception.code, "not_found")
