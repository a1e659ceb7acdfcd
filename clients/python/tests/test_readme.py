"""The README's examples, run as written against a real server: its
``python`` blocks in order in one interpreter (later blocks use the ``lb``
and ``sid`` of earlier ones, as a reader's session would), each block's
output compared with the "prints" block after it; and its offline install
into a fresh ``venv``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from .harness import REPO_ROOT, Server

README = Path(__file__).resolve().parents[1] / "README.md"

# The blocks not run, found by a line they contain, each with why.
NOT_RUN = {
    "await Runner.run(": "the Agents SDK's example needs the SDK and a model",
    "lb.events(sid, after_seq=0)": "it follows the session until stopped (tests/test_events.py)",
    "lb.tenant_events(": "it follows the tenant until stopped (tests/test_events.py)",
}

# Runs the blocks it reads from stdin (a JSON list) in one namespace and
# answers, as JSON, what each printed.
DRIVER = r"""
import contextlib, io, json, sys
blocks = json.load(sys.stdin)
ns = {"__name__": "__main__"}
out = []
for line, code in blocks:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md:%d" % line, "exec"), ns)
    out.append(buf.getvalue())
sys.__stdout__.write(json.dumps(out))
"""


def blocks(lang: str) -> "list[tuple[int, str, str | None]]":
    """Each ``lang`` block: its line, its code, and the "prints" block after it."""
    text = README.read_text()
    out = []
    for m in re.finditer(r"```%s\n(.*?)```" % lang, text, re.S):
        after = re.match(r"\s*prints\s*\n\n```\n(.*?)```", text[m.end() :], re.S)
        out.append((text.count("\n", 0, m.start()) + 2, m.group(1), after.group(1) if after else None))
    return out


class ReadmeTest(unittest.TestCase):
    def test_python_blocks_run_and_print_what_they_show(self) -> None:
        server = Server().start()
        self.addCleanup(server.stop)
        run = [b for b in blocks("python") if not any(k in b[1] for k in NOT_RUN)]
        self.assertGreaterEqual(len(run), 5, "the README's examples were not found")
        env = dict(os.environ, LOGBOOK_URL=server.url, LOGBOOK_API_KEY="", PYTHONPATH=str(REPO_ROOT / "clients" / "python"))
        p = subprocess.run(
            [sys.executable, "-c", DRIVER],
            input=json.dumps([[line, code] for line, code, _ in run]),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(p.returncode, 0, p.stderr)
        for (line, _, want), got in zip(run, json.loads(p.stdout)):
            if want is not None:
                self.assertEqual(got, want, "README.md:%d printed otherwise" % line)

    def test_offline_install_into_a_venv(self) -> None:
        block = next(code for _, code, _ in blocks("sh") if ".pth" in code)
        with tempfile.TemporaryDirectory() as d:
            # The block runs from a checkout's root: give it one whose
            # clients/python is this folder.
            (Path(d) / "clients").mkdir()
            (Path(d) / "clients" / "python").symlink_to(REPO_ROOT / "clients" / "python")
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
            p = subprocess.run(["bash", "-euc", block], cwd=d, env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "<class 'logbook.client.Client'>\n")
