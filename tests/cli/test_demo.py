"""`mockmcp demo` against the real process: every bundled scenario, every input_required round, every fault.

The demo is the newcomer's first look at the product, so it is tested as they
run it: a subprocess, its stdout read as text. Bounds are generous (the machine
is shared); they only guard against a demo that hangs.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support.bundled import stdio_representatives, stdio_shape
from support.paths import SCENARIOS
from support.process import mockmcp_cmd

BOUND = 60  # seconds for one demo; the slowest bundled scenarios take a few seconds (hangs wait for the timeout)


def demo(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    proc = subprocess.run(mockmcp_cmd("demo", *args), capture_output=True, text=True, timeout=BOUND)
    return proc, time.monotonic() - start


def summary(out: str) -> dict[str, str]:
    """The demo's closing lines: what -> verdict."""
    assert "\nsummary:\n" in out, out[-2000:]
    block = out.split("\nsummary:\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for row in block.splitlines():
        what, verdict = re.split(r"\s{2,}", row.strip(), maxsplit=1)
        rows[what] = verdict
    return rows


def tools_of(name: str) -> list[str]:
    data = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    return [t["name"] for t in data.get("tools", [])]


def assert_completed(proc: subprocess.CompletedProcess[str]) -> None:
    """What every demo of a bundled scenario shows: exit 0, the tour to its end, no traceback."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert proc.stdout.rstrip().endswith("done.")
    assert "Traceback" not in proc.stderr


# Scenarios whose demo runs through the real ``mockmcp demo`` process in a test of their own, which
# also asserts ``assert_completed``: here (mrtr, faults, progress) and in tests/cli/test_cli.py
# (default, prompts). Their run below would repeat those runs.
THROUGH_THE_CLI = {"mrtr", "faults", "progress", "default", "prompts", "tasks"}


def _demoed() -> list[str]:
    """Every bundled scenario but those of THROUGH_THE_CLI, one of each stdio shape (the 25
    ``auth-*`` ones differ from each other only in their ``auth`` section, which stdio ignores)."""
    names = sorted(p.stem for p in SCENARIOS.glob("*.yaml") if p.stem not in THROUGH_THE_CLI)
    return sorted(set(stdio_representatives(names).values()))


def test_only_scenarios_alike_over_stdio_are_demoed_once() -> None:
    names = {p.stem for p in SCENARIOS.glob("*.yaml")} - THROUGH_THE_CLI
    left = names - set(_demoed())
    assert all(n.startswith("auth-") for n in left), sorted(left)
    assert {stdio_shape(n) for n in left} <= {stdio_shape(n) for n in _demoed()}


@pytest.mark.parametrize("scenario", _demoed())
def test_every_bundled_scenario_demo_completes(scenario: str) -> None:
    """The demo's client against every bundled scenario, each served by a real spawned mock. The
    client runs in this process: the command line around it (argument parsing, exit status,
    stdout) is what the tests of THROUGH_THE_CLI check, and a demo process per scenario only
    added its start-up. An exception out of ``demo`` (the traceback a user would see) fails the test."""
    import io

    from mockmcp.cli import demo as demo_mod

    out = io.StringIO()
    start = time.monotonic()
    status = demo_mod.demo(scenario, out, timeout=1)
    assert status == 0, out.getvalue()[-3000:]
    assert out.getvalue().rstrip().endswith("done.")
    assert time.monotonic() - start < BOUND


def test_the_scenarios_demoed_through_the_cli_are_bundled() -> None:
    assert THROUGH_THE_CLI <= {p.stem for p in SCENARIOS.glob("*.yaml")}


def test_demo_mrtr_completes_every_tool_after_its_rounds() -> None:
    proc, _ = demo("mrtr")
    assert_completed(proc)
    out = proc.stdout
    rows = summary(out)
    for tool in tools_of("mrtr"):
        assert re.fullmatch(r"ok after [23] rounds", rows[f"tool {tool}"]), (tool, rows)
    assert rows["tool two_rounds"] == "ok after 3 rounds"
    assert rows["prompt personal_greeting"] == "ok after 2 rounds"
    assert rows["resource vault://secrets/Ada"] == "ok after 2 rounds"
    assert "-32021" not in out  # the demo declares every capability the scenario needs
    # every round is shown, with the canned answers the demo gave
    assert out.count("(round 1: the server needs input") == 9
    assert "(round 2: the server needs input" in out
    assert "confirm: the user answers 'Really example action?'" in out
    assert "login: the user opens https://example.com/login and accepts" in out
    assert "answer: the model answers" in out and "roots: the client lists its roots" in out
    assert '"text": "Ada likes teal"' in out
    assert "the model said: Hello from the demo's canned model!" in out
    assert "you have 2 roots" in out


def test_demo_faults_shows_every_fault_and_goes_on() -> None:
    proc, took = demo("faults", "--timeout", "1")
    assert_completed(proc)
    assert took < BOUND
    out = proc.stdout
    rows = summary(out)
    assert [w.split(" ", 1)[1] for w in rows] == tools_of("faults")
    assert rows["tool hang"] == "timed out (cancelled)"
    assert "--> notifications/cancelled" in out
    assert rows["tool crash"] == "crashed (exit status 3)"
    assert "restarting it" in out and "(restart 1)" in out
    assert rows["tool garbage"] == "ok"
    assert "skipped a line that is not a JSON object: this is not JSON" in out
    assert rows["tool flaky"] == "ok after 3 attempts"
    assert out.count("error -32603") == 2
    assert rows["tool bad_result"] == "bad result (no resultType)"
    # slow answers after 2 s, past a 1 s timeout: the demo cancels it (the default timeout waits for it)
    assert rows["tool slow"] == "timed out (cancelled)"


def test_demo_sends_a_progress_token_and_a_log_level_and_prints_the_notifications(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    proc, _ = demo("progress", "--journal", str(journal))
    assert_completed(proc)
    assert "<-- notifications/progress" in proc.stdout and "<-- notifications/message" in proc.stdout
    from mockmcp.verify.journal import read_journal

    calls = [r["message"] for r in read_journal(journal) if r["dir"] == "in" and r["message"].get("method") == "tools/call"]
    assert calls and all("progressToken" in c["params"]["_meta"] and c["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "debug" for c in calls)
    assert summary(proc.stdout)["tool slow_task"] == "ok"


def test_demo_tasks_follows_every_task_to_its_terminal_status(tmp_path: Path) -> None:
    """``mockmcp demo tasks``: the demo declares the Tasks extension (no -32021), polls each task
    at its interval (scaled by ``--time-scale``, read back from the mock's journal), answers the
    input request with ``tasks/update``, cancels the task that never ends, and prints each status."""
    journal = tmp_path / "j.jsonl"
    proc, _ = demo("tasks", "--time-scale", "0.1", "--journal", str(journal))
    assert_completed(proc)
    out = proc.stdout
    assert "-32021" not in out
    rows = summary(out)
    assert [w.split(" ", 1)[1] for w in rows] == tools_of("tasks")
    assert rows["tool build"] == "ok (task completed after 4 polls)"
    assert re.fullmatch(r"ok \(task completed after \d+ polls\)", rows["tool approve"])
    assert rows["tool doomed"] == "task failed after 3 polls: error -32603"
    assert rows["tool forever"] == "task cancelled by the demo after 21 polls"
    assert rows["tool quick"] == "ok (task completed after 2 polls)"
    assert re.fullmatch(r"ok \(task completed after \d+ polls\)", rows["tool deploy"])
    # each task's changes of status, to its terminal one, in the demo's own lines
    blocks = {m.group(1): m.group(2) for m in re.finditer(r'tools/call \{"name": "(\w+)".*?\n(.*?)(?=\n--> #\d+ tools/call|\nsummary:)', out, re.S)}
    assert 'task: completed "compiling" (poll 4)' in blocks["build"]
    assert 'task: input_required "waiting for approval"' in blocks["approve"]
    assert "approval: the user answers 'Approve example change?'" in blocks["approve"]
    assert "--> #" in blocks["approve"] and "tasks/update" in blocks["approve"]
    assert '"text": "example change: accept"' in blocks["approve"]
    assert 'task: failed "trying" (poll 3)' in blocks["doomed"] and "<-- error -32603: the job ran out of disk" in blocks["doomed"]
    assert "tasks/cancel" in blocks["forever"] and "task: cancelled" in blocks["forever"]
    assert '"text": "deployed"' in blocks["deploy"]
    assert re.search(r"--> #\d+ tasks/get", out) is None  # the polls are not printed one by one, only the changes
    from mockmcp.verify.journal import read_journal

    # the polls the mock read: never sooner than the task's pollIntervalMs x 0.1 after the call or the last poll
    interval = {t: 0.05 if t == "deploy" else 0.01 for t in tools_of("tasks")}
    last: dict[str, tuple[str, float]] = {}  # taskId -> (tool, time of the latest tools/call answer or poll)
    calls: dict[object, str] = {}
    gaps: list[tuple[str, float]] = []
    for rec in read_journal(journal):
        msg = rec.get("message") or {}
        if rec["dir"] == "in" and msg.get("method") == "tools/call":
            calls[msg["id"]] = msg["params"]["name"]
        elif rec["dir"] == "out" and msg.get("id") in calls and (msg.get("result") or {}).get("resultType") == "task":
            last[msg["result"]["taskId"]] = (calls[msg["id"]], rec["t"])
        elif rec["dir"] == "in" and msg.get("method") == "tasks/get":
            tool, then = last[msg["params"]["taskId"]]
            gaps.append((tool, rec["t"] - then))
            last[msg["params"]["taskId"]] = (tool, rec["t"])
    assert len(gaps) >= 38, gaps
    assert all(gap >= interval[tool] * 0.95 for tool, gap in gaps), gaps


def test_demo_of_a_broken_scenario_fails_with_its_problems() -> None:
    proc, _ = demo(str(Path(__file__).parents[1] / "data" / "broken" / "unknown-key.yaml"))
    assert proc.returncode == 1
    assert "the mock could not start" in proc.stdout and "unknown key 'colour'" in proc.stdout
    assert "restart" not in proc.stdout
    assert proc.stdout.count("unknown key 'colour'") == 1  # (told once, not again as the mock's stderr)


def test_demo_with_a_journal_the_mock_cannot_write_says_so_once(tmp_path: Path) -> None:
    proc, _ = demo("default", "--journal", str(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout.count(f"--journal: cannot write {tmp_path}: ") == 1, proc.stdout
    assert "as a timeline" not in proc.stdout  # (no journal to draw)


# A stand-in mock that takes a while to start (a loaded machine), then reads a request and answers it.
SLOW_START = """\
import json, sys, time
time.sleep(float(sys.argv[1]))
rid = json.loads(sys.stdin.readline())["id"]
print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete"}}), flush=True)
sys.stdin.read()
"""


def test_demo_timeout_runs_from_when_the_mock_has_read_the_request() -> None:
    """A fresh mock's start-up is not a slow answer: a 0.3 s timeout, a process that reads its
    first line only after 1.5 s, and the answer is still taken, not cancelled."""
    import io
    import sys

    from mockmcp.cli import demo as demo_mod

    out = io.StringIO()
    session = demo_mod.Session([sys.executable, "-c", SLOW_START, "1.5"], out, timeout=0.3)
    try:
        reply = session.request("server/discover")
    finally:
        session.close()
    assert reply.get("result") == {"resultType": "complete"}, out.getvalue()
    assert "cancelling" not in out.getvalue()


def test_demo_gives_up_on_a_mock_that_never_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up allowance is bounded: a process that never reads its stdin is timed out."""
    import io
    import sys

    from mockmcp.cli import demo as demo_mod

    monkeypatch.setattr(demo_mod, "STARTUP_LIMIT", 0.5)
    out = io.StringIO()
    session = demo_mod.Session([sys.executable, "-c", SLOW_START, "60"], out, timeout=0.3)
    start = time.monotonic()
    try:
        reply = session.request("server/discover")
    finally:
        session.mock.proc.kill()
        session.close()
    assert reply.get("demo") == "timed out (cancelled)"
    assert time.monotonic() - start < BOUND
