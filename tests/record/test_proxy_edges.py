"""``mockmcp proxy``'s server side: whatever the real server writes is passed on or reported, never a crash.

The "real server" here is a few lines of Python (``support.hostileserver``) that writes,
for each call of its ``hostile`` tool, the lines the call asks for (any bytes:
deep nesting, huge lines, invalid UTF-8, lone surrogates, NUL bytes, JSON-RPC
with wrong types, answers to ids nobody asked) and then the call's answer (its
result may be hostile too), then a ``notifications/message`` marking the end.
The client side of the test checks that every such line reached it byte for
byte, and after each input sends a probe (``ping``, answered by the real server
through the proxy) that must be answered. The lines are the stdio fuzzer's own
(tests/wire/test_fuzz.py) plus a fixed list of the worst cases, under a faults file
that also rewrites, duplicates and drops answers, with the journal on (its
observer decodes every server line too).

``test_record_edges`` runs the same server under ``mockmcp record``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from support.fuzz import mutated
from support.hostileserver import ANSWERS, FIXED_LINES, Client, exchange, expected, hostile_call, matches, server_script
from support.process import mockmcp_prefix

FAULTS = """\
mockmcp: 1
tools:
  - name: hostile
    replies:
      - when: {arguments: {mode: wrong}}
        steps: [{forward: wrong-id}]
      - when: {arguments: {mode: dup}}
        steps: [{forward: duplicate}]
      - when: {arguments: {mode: drop}}
        steps: [{forward: drop}]
"""

HUGE_LINES = [{"repeat": "x", "times": 17 * 1024 * 1024}, {"repeat": "[", "times": 5 * 1024 * 1024}]


def run_proxy(tmp_path: Path, cases: list[tuple[list[Any], str, bytes | None]]) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text(FAULTS)
    journal = tmp_path / "journal.jsonl"
    cmd = [*mockmcp_prefix(), "proxy", "--faults", str(faults), "--journal", str(journal), "--",
           sys.executable, str(server_script(tmp_path))]
    client = Client(cmd, tmp_path / "stderr")
    try:
        for n, (lines, mode, answer) in enumerate(cases):
            got = exchange(client, n, hostile_call(n, lines, mode, answer))
            for want in expected(lines):  # passed on byte for byte, in order
                assert want in got, (n, want[:200], [g[:200] for g in got])
            sizes = [len(g) for g in got]
            for item in lines:
                if type(item) is dict:
                    assert item["times"] // 65536 * 65536 + 1 in sizes, (n, sizes)
            if mode == "pass" and answer is None:
                assert any(matches(g, "id", f"request-{n:06d}") for g in got), (n, got)
        status = client.close()
    finally:
        client.kill()
    err = client.stderr()
    assert status == 0 and b"Traceback" not in err, err[-3000:]
    for raw in journal.read_bytes().splitlines():
        json.loads(raw)  # the journal stays JSON Lines whatever the server wrote


def test_a_deeply_nested_server_line_is_passed_on_not_a_crash(tmp_path: Path) -> None:
    """A line of 100,000 ``[`` from the real server while an answer is owed (so the proxy reads it):
    the client gets it as it was, then the answer, and the proxy lives on."""
    cmd = [*mockmcp_prefix(), "proxy", "--", sys.executable, str(server_script(tmp_path))]
    client = Client(cmd, tmp_path / "stderr")
    try:
        got = exchange(client, 0, hostile_call(0, [b"[" * 100_000]))
        assert b"[" * 100_000 + b"\n" in got
        assert any(matches(g, "id", "request-000000") for g in got)
        got = exchange(client, 1, hostile_call(1, []))  # still serving
        assert any(matches(g, "id", "request-000001") for g in got)
        status = client.close()
    finally:
        client.kill()
    err = client.stderr()
    assert status == 0 and b"Traceback" not in err, err[-3000:]


def test_the_worst_server_lines_are_passed_on(tmp_path: Path) -> None:
    modes = ["pass", "wrong", "dup", "drop"]
    cases: list[tuple[list[Any], str, bytes | None]] = []
    for i, raw in enumerate(FIXED_LINES):
        cases.append(([raw], modes[i % 4], None))
    for i, answer in enumerate(ANSWERS):
        for mode in modes:
            cases.append(([FIXED_LINES[i]], mode, answer))
    cases.append((list(HUGE_LINES), "pass", None))
    run_proxy(tmp_path, cases)


@settings(max_examples=2, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(lines=st.lists(mutated(), min_size=40, max_size=50), modes=st.lists(st.sampled_from(["pass", "wrong", "dup"]),
                                                                         min_size=50, max_size=50),
       answers=st.lists(st.none() | mutated(), min_size=50, max_size=50))
def test_fuzzed_server_lines_through_the_proxy(tmp_path: Path, lines: list[bytes], modes: list[str],
                                               answers: list[bytes | None]) -> None:
    """The stdio fuzzer's lines, written by the real server instead of the client; some calls are
    answered with one of them as the result (rewritten with a wrong id, or duplicated, by a fault)."""
    run_proxy(tmp_path, [([line], modes[i], answers[i]) for i, line in enumerate(lines)])


TAIL_SERVER = r"""
import json, os, sys
msg = json.loads(sys.stdin.buffer.readline())
sys.stdout.buffer.write(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"partial tail'
                        % json.dumps(msg["id"]).encode())
sys.stdout.buffer.flush()
os._exit(3)
"""


def test_the_server_s_last_bytes_without_a_newline_reach_the_client(tmp_path: Path) -> None:
    """The server answers half a line and exits: the proxy ends the session, but only after the
    client got those bytes (the session was once cancelled while they still sat in the writer's
    queue, and they were lost about one run in three). Twenty runs, each with the client's stdin
    kept open, so it is the server's exit that ends the session."""
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "t", "arguments": {}}}).encode() + b"\n"
    lost = []
    for run in range(20):
        proc = subprocess.Popen([*mockmcp_prefix(), "proxy", "--", sys.executable, "-c", TAIL_SERVER],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(call)
            proc.stdin.flush()
            out = proc.stdout.read()  # to EOF: the proxy ends with its server
            assert proc.wait(30) == 3, proc.stderr.read() if proc.stderr else b""  # (the server's status)
        finally:
            proc.kill()
            proc.wait()
            proc.stdin.close()
        if not out.endswith(b'"text":"partial tail'):
            lost.append((run, out[-80:]))
    assert not lost, lost
