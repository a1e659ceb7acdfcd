"""The methods beyond a turn's, each called against a real server and its
answer checked: end users, search by meaning, export and import, the
operator's calls. Their names and parameters are the other clients' (the
table in clients/PARITY.md, which ``go test ./tools/parity`` checks)."""

from __future__ import annotations

import datetime
import json
import time
import urllib.request
from typing import Any, Callable, List, Tuple

from logbook import Client, Problem

from .test_client import ServerTestCase


class EndUserTest(ServerTestCase):
    def test_sessions_of_an_end_user(self) -> None:
        lb = self.client
        mine = lb.create_session(user_id="usr_py_1", title="mine")
        lb.create_session(user_id="usr_py_2")
        self.assertEqual(mine["user_id"], "usr_py_1")
        self.assertEqual([s["id"] for s in lb.list_sessions(user_id="usr_py_1")], [mine["id"]])

        later = lb.update_session(mine["id"], expires_at="2999-01-01T00:00:00Z")
        self.assertTrue(later["expires_at"].startswith("2999-01-01T00:00:00"), later["expires_at"])
        self.assertIsNone(lb.update_session(mine["id"], expires_at=None)["expires_at"])


class MeaningTest(ServerTestCase):
    def test_passages_and_messages_with_your_embeddings(self) -> None:
        lb = self.client
        a = lb.create_agent("parity-py")
        walrus = lb.insert_passage(a["id"], "walruses eat clams", embedding=[1, 0, 0], embedding_model="parity-embed")
        lb.insert_passage(a["id"], "penguins eat fish", embedding=[0, 1, 0], embedding_model="parity-embed", tags=["birds"])
        vec = lb.search_archival(a["id"], "", mode="vector", query_embedding=[0.9, 0.1, 0])
        self.assertEqual(vec["data"][0]["id"], walrus["id"])
        words = lb.search_archival(a["id"], "penguins", mode="keyword")
        self.assertEqual([p["content"] for p in words["data"]], ["penguins eat fish"])

        s = lb.create_session(agent_id=a["id"])
        m = lb.append_message(s["id"], role="user", content="walrus?")
        put = lb.put_message_embedding(s["id"], m["id"], [1, 0, 0], "parity-embed")
        self.assertEqual((put["message_id"], put["dimensions"]), (m["id"], 3))
        got = lb.get_message_embedding(s["id"], m["id"])
        self.assertEqual((got["embedding_state"], got["embedding_model"]), ("ready", "parity-embed"))
        hits = lb.search_agent_messages(a["id"], "", mode="vector", query_embedding=[1, 0, 0])
        self.assertEqual([h["message_id"] for h in hits["data"]][:1], [m["id"]])

    def test_memory_tools_and_block_history(self) -> None:
        lb = self.client
        a = lb.create_agent("parity-py-tools")
        lb.put_block(a["id"], "human", "Name: Ada")
        r = lb.run_tool(a["id"], "core_memory_append", {"label": "human", "content": "Lives in Oslo"})
        self.assertNotIn("error", r.get("result", "").lower())
        self.assertEqual([b["version"] for b in lb.get_block_history(a["id"], "human")], [2, 1])


class TransferTest(ServerTestCase):
    def test_session_and_agent_export_and_import(self) -> None:
        lb = self.client
        s = lb.create_session(title="to move")
        lb.append_message(s["id"], role="user", content="hello")
        data = lb.export_session_bytes(s["id"])
        self.assertEqual([json.loads(line) for line in data.splitlines()], list(lb.export_session(s["id"])))
        with self.assertRaises(Problem) as cm:
            lb.import_session(data)
        self.assertEqual(cm.exception.code, "conflict")
        copy = lb.import_session(data, as_new=True)
        self.assertNotEqual(copy["id"], s["id"])
        self.assertEqual([(m["seq"], m["role"]) for m in lb.list_messages(copy["id"])], [(1, "user")])

        a = lb.create_agent("parity-py-export")
        moved = lb.import_agent(lb.export_agent(a["id"]), as_new=True)
        self.assertEqual(moved["name"], a["name"])
        self.assertNotEqual(moved["id"], a["id"])

    def test_items_export_and_import(self) -> None:
        lb = self.client
        lb.put_item(["py-transfer"], "k", {"n": 1})
        data = lb.export_items_bytes(namespace_prefix=["py-transfer"])
        with self.assertRaises(Problem) as cm:
            lb.import_items(data)
        self.assertEqual(cm.exception.code, "conflict")
        self.assertEqual(lb.import_items(data, replace=True)["items"], 1)


class AdminTest(ServerTestCase):
    """The operator's calls, on a server of their own: making a key ends its open mode."""

    def test_operator_calls(self) -> None:
        lb = self.client
        self.assertEqual(lb.get_health()["status"], "ok")
        lb.get_readiness()
        s = lb.create_session()
        lb.append_message(s["id"], role="user", content="hi", tokens=3)
        self.assertEqual(len(lb.get_usage(group_by="session")["data"]), 1)
        self.assertEqual(lb.purge_sessions(expired=True, dry_run=True)["sessions"], 0)
        self.assertTrue(lb.check_integrity()["ok"])
        lb.backup_database(name="parity.db")
        lb.get_tenant_embedding()
        with self.assertRaises(Problem) as cm:
            lb.put_tenant_embedding("http://127.0.0.1:1/v1/embeddings", "m")
        self.assertEqual(cm.exception.code, "validation_failed")
        lb.delete_tenant_embedding()

        k = lb.create_api_key("admin", name="parity")
        admin = Client(self.server.url, api_key=k["key"])
        self.assertEqual([x["id"] for x in admin.list_api_keys()], [k["id"]])
        admin.revoke_api_key(k["id"])


class WhoAmIAndTitlesTest(ServerTestCase):
    """Calls the server gained with GET /v1/whoami (and the sessions list's
    title, order and count beside it): skipped, saying so, on a server
    built before them."""

    def setUp(self) -> None:
        try:
            self.me = self.client.get_who_am_i()
        except Problem as p:
            if p.status != 404:
                raise
            self.skipTest("the server predates GET /v1/whoami")

    def test_who_am_i(self) -> None:
        self.assertEqual((self.me["tenant"], self.me["scope"], self.me["open_mode"]), ("default", "admin", True))

    def test_sessions_by_title_in_either_order_with_a_count(self) -> None:
        lb = self.client
        first = lb.create_session(title="Refund for order 1042")
        second = lb.create_session(title="refund, again")
        lb.create_session(title="something else")
        pager = lb.list_sessions(title="REFUND", order="asc", count=True)
        self.assertEqual([s["id"] for s in pager], [first["id"], second["id"]])
        self.assertEqual(lb.list_sessions(title="refund", count=True).first_page()["total"], {"count": 2, "exact": True})


class _Accepted(urllib.request.BaseHandler):
    """Counts the answers that were 202 (a job)."""

    def __init__(self) -> None:
        self.count = 0

    def http_response(self, req: urllib.request.Request, resp: Any) -> Any:
        if resp.status == 202:
            self.count += 1
        return resp


class JobsTest(ServerTestCase):
    """Purges, integrity checks and backups answered 202 with a job (as when
    they outlast the server's wait, forced here with ``Prefer:
    respond-async``) answer as the routes do when they finish in time."""

    def async_client(self) -> Tuple[Client, _Accepted]:
        accepted = _Accepted()
        opener = urllib.request.build_opener(accepted)
        opener.addheaders = [("Prefer", "respond-async")]
        return Client(self.server.url, api_key="", opener=opener), accepted

    def test_answers_as_the_routes_do(self) -> None:
        now = self.client
        later, accepted = self.async_client()
        now.create_session()
        an_hour_on = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).isoformat()
        cases: List[Tuple[str, Callable[[Client, int], Any], Callable[[Any, Any], None]]] = [
            (
                "purge",
                lambda c, _: c.purge_sessions(status="created", older_than=an_hour_on, dry_run=True),
                lambda a, b: self.assertEqual((b, a["sessions"]), (a, 1)),
            ),
            (
                "integrity",
                lambda c, _: c.check_integrity(),
                lambda a, b: self.assertEqual((b["ok"], b["integrity_check"]), (a["ok"], a["integrity_check"])),
            ),
            (
                "backup",
                lambda c, i: c.backup_database(name="jobs-py-%d.db" % i),
                lambda a, b: self.assertEqual(b["path"], a["path"].replace("-0.db", "-1.db")),
            ),
        ]
        for what, run, same in cases:
            with self.subTest(what):
                want = run(now, 0)
                before = accepted.count
                got = run(later, 1)
                self.assertEqual(accepted.count, before + 1, "the server answered no 202")
                same(want, got)

        with self.assertRaises(Problem) as cm:
            later.backup_database(name="jobs-py-1.db")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))

    def test_get_job(self) -> None:
        resp = self.client.request(
            "POST",
            "/v1/admin/purge",
            json_body={"expired": True, "dry_run": True},
            headers={"Prefer": "respond-async"},
        )
        self.assertEqual(resp.status, 202)
        job = resp.json()
        self.assertEqual(resp.headers.get("Location"), "/v1/admin/jobs/" + job["id"])
        deadline = time.monotonic() + 30
        while job["state"] == "running":
            self.assertLess(time.monotonic(), deadline, "job %s still runs" % job["id"])
            time.sleep(0.05)
            job = self.client.get_job(job["id"])
        self.assertEqual((job["state"], job["kind"], job["error"]), ("succeeded", "purge", None))
        self.assertTrue(job["result"]["dry_run"])
        with self.assertRaises(Problem) as cm:
            self.client.get_job("job_nonesuch")
        self.assertEqual(cm.exception.code, "not_found")
