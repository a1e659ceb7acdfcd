"""The live event feed: the parser, reconnects against a scripted feed, and
the real server's feeds (order, resume after a cut, filters, tenants)."""

from __future__ import annotations

import threading
import time
import unittest
from typing import List, Optional, Tuple

from logbook import Client, Event, EventStream, LogbookError, Problem
from logbook.events import _Parser

from .harness import CutProxy, ScriptedSSE, Server
from .test_client import ServerTestCase


SAFETY = 5.0
"""The idle_timeout of feeds that should never go quiet: a broken client fails instead of hanging."""


def seqs(events: List[Event]) -> List[int]:
    return [e.data["seq"] for e in events]


class ParserTest(unittest.TestCase):
    def test_fields_comments_data_lines_and_line_endings(self) -> None:
        p = _Parser()
        got = []
        for chunk in [
            b"\xef\xbb\xbfretry: 1000\n",
            b": live\n",
            b"\n",  # a blank line after only a comment dispatches nothing
            b"id: 1\n",
            b"event: message.appended\n",
            b'data: {"a":\n',
            b"data:  1}\n",  # one space after the colon is dropped, the second kept
            b"unknown: field\n",
            b"\n",
            b"id: 2\r\n",
            b"event: session.updated\r\n",
            b'data: {"b": 2}\r\n',
            b"\r\n",
            b'id: 3\revent: x\rdata\r\r',  # lone CRs; a bare "data" is an empty data line
            b"id: 9\n\n",  # an id without data: a position, not an event
            b'data: {"c": 3}\n\n',  # no event type: "message"
            b'id: 4\nevent: x\ndata: {"unfinished": ',
        ]:
            got.extend(p.feed(chunk))
        self.assertEqual(
            got,
            [
                ("1", "message.appended", '{"a":\n 1}'),
                ("2", "session.updated", '{"b": 2}'),
                ("3", "x", ""),
                ("9", "message", None),
                (None, "message", '{"c": 3}'),
            ],
        )
        self.assertEqual(p.retry, 1000)
        p.reset()  # a new connection: the unfinished event is gone
        self.assertEqual(p.feed(b"\n"), [])


class ScriptedFeedTest(unittest.TestCase):
    """Reconnects and stops, against a fake feed that does exactly what it is told."""

    def feed(self, script: List[List[object]], **kw: object) -> "tuple[ScriptedSSE, EventStream]":
        srv = ScriptedSSE(script)
        self.addCleanup(srv.close)
        lb = Client(srv.url, api_key="k", backoff=0.01, max_backoff=0.05, max_retries=2)
        kw.setdefault("idle_timeout", SAFETY)
        stream = lb.events("s1", **kw)  # type: ignore[arg-type]
        self.addCleanup(stream.close)
        return srv, stream

    def test_a_cut_stream_resumes_after_the_last_whole_event(self) -> None:
        srv, stream = self.feed(
            [
                [
                    b"retry: 1000\n: live\n\n",
                    b'id: 1\nevent: message.appended\ndata: {"seq":\ndata: 1}\n\n',
                    b'id: 2\nevent: message.appended\ndata: {"seq": 2}\n\n',
                    b'id: 3\nevent: message.appended\ndata: {"seq": 3}\n',  # cut before the blank line
                ],
                [  # the server ends this one cleanly, after sending 2 again
                    b'id: 2\nevent: message.appended\ndata: {"seq": 2}\n\n',
                    b'id: 3\nevent: message.appended\ndata: {"seq": 3}\n\n',
                ],
                [("status", 503, 0)],
                [b'id: 4\nevent: message.appended\ndata: {"seq": 4}\n\n', "hold"],
            ],
            max_events=4,
        )
        got = list(stream)
        self.assertEqual([(e.id, e.type, e.data["seq"]) for e in got], [(str(i), "message.appended", i) for i in (1, 2, 3, 4)])
        self.assertEqual([r[0] for r in srv.requests], [None, "2", "3", "3"])
        self.assertEqual((stream.last_id, stream.count, stream.duplicates, stream.reconnects), ("4", 4, 1, 2))
        self.assertTrue(stream.closed)

    def test_starts_from_after_and_after_seq(self) -> None:
        srv, stream = self.feed([[b"id: 8\nevent: x\ndata: {}\n\n"], ["hold"]], after="7", max_events=2)
        self.assertEqual(next(stream).id, "8")
        self.assertEqual(srv.requests[0], ("7", "/v1/sessions/s1/events"), "after is sent as Last-Event-ID")
        srv2, stream2 = self.feed([[], [b"id: 5\nevent: x\ndata: {}\n\n"]], after_seq=0, types=["a", "b"], max_events=1)
        self.assertEqual([e.id for e in stream2], ["5"])
        self.assertEqual(
            srv2.requests,
            [(None, "/v1/sessions/s1/events?type=a&type=b&after_seq=0")] * 2,
            "no event yet: the reconnect starts where the first connection did",
        )

    def test_idle_timeout_counts_events_not_heartbeats(self) -> None:
        srv, stream = self.feed([[b": live\n\n"] + [0.05, b": heartbeat\n\n"] * 40], idle_timeout=0.4)
        t0 = time.monotonic()
        self.assertEqual(list(stream), [])
        took = time.monotonic() - t0
        self.assertTrue(stream.timed_out)
        self.assertTrue(0.3 < took < 1.5, took)
        self.assertEqual(len(srv.requests), 1)

    def test_a_silent_connection_is_made_again(self) -> None:
        srv, stream = self.feed([[b": live\n\n", "hold"], [b'id: 7\nevent: x\ndata: {"k": 1}\n\n', "hold"]], read_timeout=0.3)
        ev = next(stream)
        self.assertEqual((ev.id, ev.data), ("7", {"k": 1}))
        self.assertEqual(len(srv.requests), 2)

    def test_close_from_another_thread_ends_iteration(self) -> None:
        _, stream = self.feed([[b": live\n\n", "hold"]])
        threading.Timer(0.2, stream.close).start()
        t0 = time.monotonic()
        with stream:
            self.assertEqual(list(stream), [])
        self.assertLess(time.monotonic() - t0, 2)
        self.assertFalse(stream.timed_out)

    def test_errors(self) -> None:
        with self.assertRaises(Problem) as cm:
            self.feed([[("status", 404, None)]])
        self.assertEqual(cm.exception.status, 404)
        with self.assertRaises(Problem) as cm:  # max_retries=2: three 503s in a row are raised
            self.feed([[("status", 503, 0)]] * 3)
        self.assertEqual(cm.exception.status, 503)
        _, stream = self.feed([[b"id: x\nevent: e\ndata: {not json\n\n"]])
        with self.assertRaises(LogbookError):
            next(stream)
        with self.assertRaises(ValueError):
            self.feed([], after="1", after_seq=1)


class LiveFeedTest(ServerTestCase):
    def test_appended_messages_arrive_in_seq_order(self) -> None:
        lb = self.client
        sid = lb.create_session()["id"]
        lb.append_messages(sid, [{"role": "user", "content": "before"}] * 2)
        with lb.events(sid, types="message.appended", idle_timeout=SAFETY) as feed:  # from now
            got: List[Event] = []

            def write() -> None:
                lb.append_message(sid, role="user", content="m3")
                lb.append_messages(sid, [{"role": "assistant", "content": "m%d" % i} for i in range(4, 8)])
                lb.append_message(sid, role="user", content="m8\nwith a line break", metadata={"k": "a\nb"})

            w = threading.Thread(target=write)
            w.start()
            for ev in feed:
                got.append(ev)
                if len(got) == 6:
                    break
            w.join()
        self.assertEqual(seqs(got), [3, 4, 5, 6, 7, 8])
        self.assertEqual([e.type for e in got], ["message.appended"] * 6)
        self.assertEqual([e.session_id for e in got], [sid] * 6)
        ids = [e.id for e in got]
        self.assertEqual(len(set(ids)), len(ids), "an id per event")
        self.assertFalse(any(i.isdigit() for i in ids), "ids are opaque strings, not numbers")
        last = got[-1].message
        assert last is not None
        self.assertEqual((last["content"], last["metadata"]), ("m8\nwith a line break", {"k": "a\nb"}))
        self.assertEqual(feed.last_id, ids[-1])

        # after= goes on from a position (a last_id kept from before).
        lb.append_message(sid, role="user", content="m9")
        later = list(lb.events(sid, after=ids[2], types="message.appended", max_events=4, idle_timeout=SAFETY))
        self.assertEqual(seqs(later), [6, 7, 8, 9])

    def test_after_seq_and_type_filters(self) -> None:
        lb = self.client
        sid = lb.create_session()["id"]
        lb.append_messages(sid, [{"role": "user", "content": str(i)} for i in range(1, 6)])
        lb.put_checkpoint(sid, 1, {"step": 1})
        lb.update_session(sid, title="named")

        every = list(lb.events(sid, after_seq=0, max_events=8, idle_timeout=SAFETY))
        self.assertEqual(
            [e.type for e in every],
            ["session.created"] + ["message.appended"] * 5 + ["checkpoint.created", "session.updated"],
        )
        self.assertEqual(seqs(every[1:6]), [1, 2, 3, 4, 5])
        self.assertEqual((every[6].data["iteration"], every[7].data["title"]), (1, "named"))

        self.assertEqual(seqs(list(lb.events(sid, after_seq=3, max_events=2, idle_timeout=SAFETY))), [4, 5])
        only = list(
            lb.events(sid, after_seq=0, types=["checkpoint.created", "session.updated"], max_events=2, idle_timeout=SAFETY)
        )
        self.assertEqual([e.type for e in only], ["checkpoint.created", "session.updated"])
        msgs = list(lb.events(sid, after_seq=2, types="message.appended", idle_timeout=0.3))
        self.assertEqual(seqs(msgs), [3, 4, 5], "and nothing after them")

        with self.assertRaises(Problem) as cm:
            lb.events(sid, after_seq=6)
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_query"))
        with self.assertRaises(Problem) as cm:
            lb.events(sid, types="message.nope")
        self.assertEqual(cm.exception.code, "invalid_query")
        with self.assertRaises(Problem) as cm:
            lb.events("no-such-session")
        self.assertEqual(cm.exception.code, "not_found")

    def test_a_cut_connection_resumes_without_loss_or_repeats(self) -> None:
        proxy = CutProxy(self.server.url)
        self.addCleanup(proxy.close)
        far = Client(proxy.url, api_key="", backoff=0.01, max_backoff=0.1)
        sid = self.client.create_session()["id"]
        feed = far.events(sid, after_seq=0, types="message.appended", idle_timeout=SAFETY)
        self.addCleanup(feed.close)

        self.client.append_messages(sid, [{"role": "user", "content": str(i)} for i in range(1, 4)])
        got = [next(feed) for _ in range(3)]
        self.assertEqual(proxy.cut(), 1)
        self.client.append_messages(sid, [{"role": "user", "content": str(i)} for i in range(4, 7)])  # while cut off
        got += [next(feed) for _ in range(3)]
        self.assertEqual(seqs(got), [1, 2, 3, 4, 5, 6])
        self.assertEqual(feed.reconnects, 1)
        self.assertEqual(proxy.header(1, "Last-Event-ID"), got[2].id)

        # Cut again with events in flight (some may sit in the socket's buffer),
        # and write more while cut off.
        self.client.append_messages(sid, [{"role": "user", "content": str(i)} for i in range(7, 27)])
        got += [next(feed) for _ in range(5)]
        proxy.cut()
        self.client.append_messages(sid, [{"role": "user", "content": str(i)} for i in range(27, 37)])
        got += [next(feed) for _ in range(25)]
        self.assertEqual(seqs(got), list(range(1, 37)), "each once, in order")
        self.assertEqual(feed.reconnects, 2)

        # Every connection cut after 1000 bytes of its answer: in the middle of
        # an event, one or two events in.
        proxy.limit = 1000
        proxy.cut()
        self.client.append_messages(sid, [{"role": "user", "content": "x" * (i % 7) + str(i)} for i in range(37, 57)])
        got += [next(feed) for _ in range(20)]
        self.assertEqual(seqs(got), list(range(1, 57)))
        self.assertEqual(len({e.id for e in got}), len(got))
        self.assertGreaterEqual(feed.reconnects, 2 + 5, "a connection per event or two")
        self.assertEqual(feed.duplicates, 0)
        proxy.limit = None

        # Closing the response under the reader counts as a drop too.
        resp = feed._resp
        assert resp is not None
        resp.close()
        self.client.append_message(sid, role="user", content="57")
        self.assertEqual(next(feed).data["seq"], 57)


class ServerRestartTest(unittest.TestCase):
    def test_a_feed_follows_the_server_through_a_restart(self) -> None:
        srv = Server().start()
        self.addCleanup(srv.stop)
        lb = Client(srv.url, api_key="", backoff=0.05, max_backoff=0.2, max_retries=40)
        sid = lb.create_session()["id"]
        feed = lb.events(sid, types="message.appended", idle_timeout=SAFETY)
        self.addCleanup(feed.close)
        lb.append_message(sid, role="user", content="1")
        self.assertEqual(next(feed).data["seq"], 1)

        assert srv.proc is not None
        srv.proc.terminate()  # a graceful shutdown ends the stream
        srv.proc.wait(10)
        srv._start()  # the same database and port
        lb.append_messages(sid, [{"role": "user", "content": "2"}, {"role": "user", "content": "3"}])
        self.assertEqual([next(feed).data["seq"] for _ in range(2)], [2, 3])
        self.assertGreaterEqual(feed.reconnects, 1)


class TenantFeedTest(unittest.TestCase):
    server: Server
    acme: Client
    globex: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server().start()
        try:
            a = cls.server.cli("keys", "create", "--tenant", "acme", "--scope", "write", "--name", "a")
            g = cls.server.cli("keys", "create", "--tenant", "globex", "--scope", "write", "--name", "g")
        except BaseException:
            cls.server.stop()
            raise
        cls.acme = Client(cls.server.url, api_key=a)
        cls.globex = Client(cls.server.url, api_key=g)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_each_key_sees_its_tenant_only(self) -> None:
        acme_feed = self.acme.tenant_events(idle_timeout=0.5)
        globex_feed = self.globex.tenant_events(idle_timeout=0.5)
        self.addCleanup(acme_feed.close)
        self.addCleanup(globex_feed.close)

        sa = self.acme.create_session(title="acme's")["id"]
        sg = self.globex.create_session(title="globex's")["id"]
        self.acme.append_messages(sa, [{"role": "user", "content": "a1"}, {"role": "user", "content": "a2"}])
        self.globex.append_message(sg, role="user", content="g1")
        sa2 = self.acme.create_session()["id"]
        self.acme.append_message(sa2, role="user", content="a3")

        def seen(feed: EventStream) -> List[Tuple[str, Optional[str], Optional[str]]]:
            return [(e.type, e.session_id, e.data.get("content")) for e in feed]

        self.assertEqual(
            seen(acme_feed),
            [
                ("session.created", sa, None),
                ("message.appended", sa, "a1"),
                ("message.appended", sa, "a2"),
                ("session.created", sa2, None),
                ("message.appended", sa2, "a3"),
            ],
        )
        self.assertEqual(seen(globex_feed), [("session.created", sg, None), ("message.appended", sg, "g1")])

        # From an id of the tenant's feed: filters by session and type; another
        # tenant's key cannot use that id, nor follow the session.
        start = self.acme.events(sa, after_seq=0, max_events=1, idle_timeout=SAFETY)
        first = next(start)
        start.close()
        one = list(self.acme.tenant_events(after=first.id, session_id=sa2, types="message.appended", max_events=1, idle_timeout=SAFETY))
        self.assertEqual([(e.session_id, e.data["content"]) for e in one], [(sa2, "a3")])
        with self.assertRaises(Problem) as cm:
            self.globex.tenant_events(after=first.id, session_id=sa)
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_event_id"))
        leak = self.globex.tenant_events(session_id=sa, idle_timeout=0.3)
        self.acme.append_message(sa, role="user", content="a4")
        self.assertEqual(list(leak), [])
        with self.assertRaises(Problem) as cm:
            self.globex.events(sa, after_seq=0)
        self.assertEqual(cm.exception.code, "not_found")


if __name__ == "__main__":
    unittest.main()
