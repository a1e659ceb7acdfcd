"""Streams of messages (append_many, open_stream) against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

from logbook import Client, LineError, LineResult, LogbookError, Problem

from .harness import REPO_ROOT, CutProxy
from .test_client import ServerTestCase


def user_messages(n: int, label: str) -> List[Dict[str, Any]]:
    return [{"role": "user", "content": "%s %d" % (label, i + 1), "tokens": 1} for i in range(n)]


def answer_503() -> bytes:
    body = b'{"type":"urn:logbook:problem:storage_unavailable","title":"Service Unavailable","status":503,"detail":"injected","code":"storage_unavailable"}'
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 0\r\n"
        b"X-Request-Id: proxy\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )


class StreamTest(ServerTestCase):
    def setUp(self) -> None:
        self.proxy = CutProxy(self.server.url)
        self.addCleanup(self.proxy.close)
        self.via = Client(self.proxy.url, api_key="", backoff=0.001, max_backoff=0.01)

    def assert_stored(self, sid: str, results: List[LineResult], messages: List[Dict[str, Any]]) -> None:
        """Fail unless results are messages stored in order from seq 1, and the session holds exactly them."""
        self.assertEqual(len(results), len(messages))
        for i, r in enumerate(results):
            self.assertIsNone(r.error, "line %d: %s" % (i + 1, r.error))
            assert r.message is not None
            self.assertEqual((r.line, r.message["seq"], r.message["content"]), (i + 1, i + 1, messages[i]["content"]))
            self.assertTrue(r.key)
        s = self.client.get_session(sid)
        self.assertEqual((s["last_seq"], s["message_count"]), (len(messages), len(messages)), "each stored once")

    def test_a_thousand_messages_on_one_request_in_order(self) -> None:
        sid = self.client.create_session()["id"]
        msgs = user_messages(1000, "message")
        res = self.via.append_many(sid, msgs, key_prefix="load-1:")
        self.assertEqual(len(self.proxy.heads), 1, "one request")
        self.assert_stored(sid, res, msgs)
        self.assertEqual(res[41].key, "load-1:42")

        again = self.client.append_many(sid, msgs, key_prefix="load-1:")
        self.assert_stored(sid, again, msgs)
        assert again[999].message and res[999].message
        self.assertEqual(again[999].message["id"], res[999].message["id"], "the resend answers what was stored")

    def test_batch_mode_sends_one_request_per_batch_in_order(self) -> None:
        sid = self.client.create_session()["id"]
        msgs = user_messages(600, "batched")
        self.assert_stored(sid, self.via.append_many(sid, msgs, mode="batch", window=100), msgs)
        self.assertGreaterEqual(len(self.proxy.heads), 6, "batches of at most 100")

    def test_the_first_refusal_stops_the_stream(self) -> None:
        taken = self.client.create_session()["id"]
        self.client.append_many(taken, [{"role": "user", "content": "first", "idempotency_key": "taken"}])
        cases = [
            ("tool result without its call", self.client.create_session()["id"], {"role": "tool", "content": "{}"}, 4, "validation_failed", 3),
            ("key of another message", taken, {"role": "user", "content": "another", "idempotency_key": "taken"}, 2, "idempotency_conflict", 2),
            ("no such session", "ses_nope", {"role": "user", "content": "x"}, 1, "not_found", None),
        ]
        for name, sid, bad, at, code, last_seq in cases:
            with self.subTest(name):
                msgs = user_messages(8, "stopped")
                msgs[at - 1] = bad
                with self.assertRaises(LineError) as cm:
                    self.client.append_many(sid, msgs)
                err = cm.exception
                self.assertEqual((err.line, err.code, err.refused), (at, code, True))
                self.assertEqual(str(err).count("line %d" % at), 1, "names the line once: %s" % err)
                assert err.results is not None
                self.assertEqual(len(err.results), len(msgs))
                for r in err.results:
                    if r.line < at:
                        self.assertIsNotNone(r.message, "line %d stored" % r.line)
                    elif r.line == at:
                        assert r.error is not None and isinstance(r.error.cause, Problem)
                        self.assertEqual(r.error.cause.code, code)
                        if code == "validation_failed":
                            self.assertIn("tool_call_id", r.error.cause.fields)
                        if last_seq is not None:
                            self.assertEqual(r.error.cause.body.get("line"), at, "the problem names the line")
                    else:
                        assert r.error is not None
                        self.assertEqual((r.error.code, r.error.refused), ("stream_stopped", True), "line %d" % r.line)
                if last_seq is not None:
                    self.assertEqual(self.client.get_session(sid)["last_seq"], last_seq)

    def test_a_cut_connection_is_resent_and_each_message_stored_once(self) -> None:
        for name, plan in [
            ("request cut mid-line", {"request_limit": 16 << 10}),
            ("answer cut after messages were stored", {"answer_limit": 4 << 10}),
            ("a 503 from a proxy", {"answer": answer_503()}),
        ]:
            with self.subTest(name):
                proxy = CutProxy(self.server.url)
                self.addCleanup(proxy.close)
                proxy.plan(**plan)
                via = Client(proxy.url, api_key="", backoff=0.001, max_backoff=0.01)
                sid = self.client.create_session()["id"]
                msgs = user_messages(500, name)
                got: List[LineResult] = []
                with via.open_stream(sid, window=64) as w:
                    results = w.results()
                    reader = threading.Thread(target=lambda: got.extend(results))
                    reader.start()
                    for m in msgs:
                        w.send(m)
                reader.join()
                self.assertGreaterEqual(len(proxy.heads), 2, "the broken request and a retry")
                self.assert_stored(sid, got, msgs)

    def test_never_more_messages_on_their_way_than_the_window(self) -> None:
        sid = self.client.create_session()["id"]
        msgs = user_messages(300, "windowed")
        self.assert_stored(sid, self.via.append_many(sid, msgs, window=8), msgs)
        self.assertEqual(self.proxy.sent, 300, "the proxy counted every message")
        self.assertLessEqual(self.proxy.max_in_flight, 8)

    def test_a_new_request_when_one_is_older_than_request_age(self) -> None:
        sid = self.client.create_session()["id"]
        msgs = user_messages(5, "slow")
        got: List[LineResult] = []
        w = self.via.open_stream(sid, request_age=0)
        results = w.results()
        for m in msgs:
            w.send(m)
            got.append(next(results))
        w.close()
        self.assertEqual(list(results), [])
        self.assertEqual(len(self.proxy.heads), 5, "one request per message")
        self.assert_stored(sid, got, msgs)

    def test_after_a_refusal_send_and_close_raise_it(self) -> None:
        sid = self.client.create_session()["id"]
        w = self.client.open_stream(sid)
        w.send({"role": "tool", "content": "no call"})
        with self.assertRaises(LineError) as cm:
            w.close()
        self.assertEqual(cm.exception.code, "validation_failed")
        with self.assertRaises(LineError) as again:
            w.send({"role": "user", "content": "late"})
        self.assertIs(again.exception, cm.exception)

        empty = self.client.open_stream(sid)
        empty.close()
        with self.assertRaisesRegex(LogbookError, "closed"):
            empty.send({"role": "user", "content": "late"})
        with self.assertRaises(ValueError):
            self.client.open_stream(sid, key_prefix="bad\n")

    def test_readme_stream_example_runs_and_prints_what_it_shows(self) -> None:
        readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
        section = readme[readme.index("## Streams") :]
        code = re.search(r"```python\n(.*?)```", section, re.S)
        printed = re.search(r"prints\s*\n\n```\n(.*?)```", section, re.S)
        assert code and printed
        env = dict(os.environ, LOGBOOK_URL=self.server.url, PYTHONPATH=str(REPO_ROOT / "clients" / "python"))
        out = subprocess.run([sys.executable, "-c", code.group(1)], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, printed.group(1))
