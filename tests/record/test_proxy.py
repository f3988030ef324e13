"""``mockmcp proxy``: the official Python SDK's server behind the mock's shell, with faults in front.

One session of raw JSON-RPC lines through the proxy exercises every fault the
scenario format has for a real server's traffic (delay, jitter, dribble, hang,
error, garbage, drop, duplicate, wrong id, exit) and its targeting (``when``,
``nth``, ``first``, ``probability``); another drives it with the official Python
client, which must get what the server gives it directly; the journal, client
checks and expectations work as in ``mockmcp run``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.messages import line, request
from interop.matrix import run_batch
from support import zygote
from support.process import mockmcp_prefix
from support.rawservers import GARBAGE_SERVER

pytestmark = pytest.mark.usefixtures("zygote")

SERVER = zygote.command("sdk_server.py")  # through this worker's fork server (support.zygote)

FAULTS = """\
mockmcp: 1
tools:
  - name: echo
    replies:
      - when: {arguments: {text: slow}}
        steps: [{sleep: 400ms}, {forward: pass}]
      - when: {arguments: {text: jitter}}
        steps: [{sleep: {min: 10ms, max: 30ms}}, {forward: pass}]
      - when: {arguments: {text: drop}}
        steps: [{forward: drop}]
      - when: {arguments: {text: dup}}
        steps: [{forward: duplicate}]
      - when: {arguments: {text: wrong}}
        steps: [{forward: wrong-id}]
      - when: {arguments: {text: err}}
        steps: [{error: {code: -32603, message: injected}}]
      - when: {arguments: {text: junk}}
        steps: [{rawBytes: "junk line\\n"}, {forward: pass}]
      - when: {arguments: {text: drib}}
        steps: [{dribble: {chunkBytes: 40, pause: 5ms}}, {forward: pass}]
      - when: {arguments: {text: hang}}
        steps: [{hang: true}]
      - when: {arguments: {text: count}, nth: 2}
        steps: [{error: {code: -32000, message: second one fails}}]
      - when: {arguments: {text: never}, probability: 0}
        steps: [{error: {code: -32000, message: never}}]
  - name: add
    replies:
      - when: {first: 1}
        steps: [{exit: {status: 7}}]
"""


def proxy_cmd(*args: str) -> list[str]:
    return [*mockmcp_prefix(), "proxy", *args, "--", *SERVER]


def echo(rid: int, text: str) -> dict[str, Any]:
    return request(rid, "tools/call", {"name": "echo", "arguments": {"text": text}})


def converse(cmd: list[str], msgs: list[dict[str, Any]], wait_for: set[Any], timeout: float = 60) -> tuple[list[bytes], int, bytes]:
    """Write every request, read until each id in ``wait_for`` is answered, then close stdin."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(line(m) for m in msgs))
    proc.stdin.flush()
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while wait_for and time.monotonic() < deadline:
            raw = proc.stdout.readline()
            if not raw:
                break
            got.append(raw)
            try:
                wait_for.discard(json.loads(raw).get("id"))
            except ValueError:
                pass
        rest, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return got + rest.splitlines(keepends=True), proc.returncode, err


def test_every_fault_in_front_of_a_real_server(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text(FAULTS)
    journal = tmp_path / "j.jsonl"
    texts = ["plain", "slow", "jitter", "drop", "dup", "wrong", "err", "junk", "drib", "hang", "count", "count", "never"]
    msgs = [echo(i, t) for i, t in enumerate(texts, 1)]
    t0 = time.monotonic()
    lines, status, err = converse(proxy_cmd("--faults", str(faults), "--journal", str(journal), "--grace", "1"), msgs,
                                  {1, 2, 3, 5, 7, 8, 9, 11, 12, 13, 1_000_006})
    assert status == 0, err
    assert b"junk line\n" in lines  # garbage written before the real answer
    answers: dict[Any, list[dict[str, Any]]] = {}
    for raw in lines:
        if raw != b"junk line\n":
            msg = json.loads(raw)
            answers.setdefault(msg["id"], []).append(msg)
    assert answers[1][0]["result"]["content"][0]["text"] == "echo: plain"  # untouched
    assert answers[2][0]["result"]["content"][0]["text"] == "echo: slow"
    assert lines.index(line_of(answers[2][0], lines)) > lines.index(line_of(answers[1][0], lines))
    assert 4 not in answers  # dropped
    assert len(answers[5]) == 2  # duplicated
    assert 6 not in answers and answers[1_000_006][0]["result"]["content"][0]["text"] == "echo: wrong"
    assert answers[7][0]["error"] == {"code": -32603, "message": "injected"}  # the server never saw it
    assert answers[9][0]["result"]["content"][0]["text"] == "echo: drib"
    assert 10 not in answers  # hung
    assert "result" in answers[11][0] and answers[12][0]["error"]["message"] == "second one fails"  # nth: 2
    assert "result" in answers[13][0]  # probability 0 never fires
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    assert sum(r["dir"] == "in" for r in records) == len(msgs)
    assert {"dir": "event", "kind": "dropped", "id": 4}.items() <= next(
        r for r in records if r.get("kind") == "dropped").items()
    outs = [r for r in records if r["dir"] == "out"]
    assert any(r.get("message", {}).get("id") == 1 for r in outs) and any(r.get("fault") for r in outs)
    assert time.monotonic() - t0 < 30


def line_of(msg: dict[str, Any], lines: list[bytes]) -> bytes:
    return next(raw for raw in lines if raw.startswith(b"{") and json.loads(raw) == msg)


def test_a_scripted_exit_takes_the_server_down_with_it(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text(FAULTS)
    lines, status, _ = converse(proxy_cmd("--faults", str(faults)),
                                [request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})], {1})
    assert status == 7 and lines == []


def test_the_python_client_gets_through_the_proxy_what_the_server_gives_it_directly(tmp_path: Path) -> None:
    ops = [{"op": "listTools"}, {"op": "callTool", "name": "count", "arguments": {"n": 2}},
           {"op": "callTool", "name": "greet", "arguments": {}}, {"op": "readResource", "uri": "fixture://readme"}]
    direct, proxied = run_batch("python-asyncio", [
        {"command": SERVER, "ops": ops, "timeoutMs": 15000},
        {"command": proxy_cmd(), "ops": ops, "timeoutMs": 15000},
    ], jobs=2)
    assert proxied["connect"]["status"] == "ok", proxied
    assert [(o["status"], o.get("result"), o.get("progress")) for o in proxied["ops"]] == [
        (o["status"], o.get("result"), o.get("progress")) for o in direct["ops"]]
    assert proxied["callbacks"] == direct["callbacks"] == {"elicitation": ["form"]}


def test_expectations_and_strict_work_as_in_run(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text("mockmcp: 1\nexpectations:\n  - {method: tools/call, name: add, atLeast: 1}\n")
    report = tmp_path / "r.json"
    _, status, err = converse(proxy_cmd("--faults", str(faults), "--report", str(report), "--strict"), [echo(1, "x")], {1})
    assert status == 1, err
    assert json.loads(report.read_text())["ok"] is False


def test_bad_faults_file_and_bad_command_are_clear_errors(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text("mockmcp: 1\ntools:\n  - name: echo\n    replies:\n      - steps: [{forward: sideways}]\n")
    proc = subprocess.run(proxy_cmd("--faults", str(faults)), capture_output=True, timeout=30)
    assert proc.returncode == 2 and b"faults.yaml:5:" in proc.stderr, proc.stderr
    proc = subprocess.run([*mockmcp_prefix(), "proxy", "--", "no-such-server-xyz"], capture_output=True,
                          timeout=30)
    assert proc.returncode == 2 and b"not found" in proc.stderr
    # a server that dies at once: refused before stdin is read (stdin stays open here)
    dying = subprocess.Popen([*mockmcp_prefix(), "proxy", "--", sys.executable, "-c", "raise SystemExit(4)"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = dying.communicate(timeout=30)
    finally:
        dying.kill()
    assert dying.returncode == 2 and not out and b"exited at once with status 4" in err, err


def test_a_forward_step_outside_the_proxy_is_an_error_not_a_crash(tmp_path: Path) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text(FAULTS)
    proc = subprocess.run([*mockmcp_prefix(), "run", str(faults)], input=line(echo(1, "slow")),
                          capture_output=True, timeout=30)
    (answer,) = map(json.loads, proc.stdout.splitlines())
    assert answer["error"]["code"] == -32603 and "proxy" in answer["error"]["message"]


@pytest.mark.parametrize("text", ["drop"])
def test_dropped_answers_do_not_hold_up_the_exit(tmp_path: Path, text: str) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text(FAULTS)
    t0 = time.monotonic()
    # A grace far beyond the bound: on a busy machine spawning the proxy and its server alone can
    # take many seconds, but only a proxy waiting for an answer still owed takes ten minutes.
    _, status, _ = converse(proxy_cmd("--faults", str(faults), "--grace", "600"), [echo(1, text), echo(2, "x")], {2})
    assert status == 0 and time.monotonic() - t0 < 120  # the server did answer: nothing was still owed


def test_garbage_from_the_server_is_passed_through_unchanged(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    cmd = [*mockmcp_prefix(), "proxy", "--journal", str(journal), "--", sys.executable, "-c", GARBAGE_SERVER]
    lines, status, err = converse(cmd, [echo(1, "x"), echo(2, "y")], {1, 2})
    assert status == 0, err
    assert b"".join(lines) == (b"garbage \x01 not json\n\xff\xfe\n" + line_of_id(lines, 1)) + (
        b"garbage \x01 not json\n\xff\xfe\n" + line_of_id(lines, 2))
    assert any(json.loads(r).get("fault") for r in journal.read_text().splitlines())


def line_of_id(lines: list[bytes], rid: int) -> bytes:
    return next(raw for raw in lines if raw.startswith(b"{") and json.loads(raw)["id"] == rid)
