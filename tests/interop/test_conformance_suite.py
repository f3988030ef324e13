"""The official conformance suite's server scenarios against the bundled fixtures, through the real process.

``@modelcontextprotocol/conformance`` (pinned with the Node.js 22 it needs in
tests/interop/conformance/package-lock.json, installed like the TypeScript client: ``npm ci``
once per lockfile, under a file lock; tests/interop/tsclient.py) tests servers as well as
clients. Each test spawns ``mockmcp run SCENARIO --http 0``, points ``conformance server`` at the
URL of its first stdout line and reads every check the suite wrote (``-o DIR``: one
``checks.json`` per scenario): any ``FAILURE`` fails the test, with the failed checks printed.

- ``conformance-server`` with ``--requirements 2026-07-28``: the scenarios the revision requires,
  plus the ten Tasks extension scenarios (``tasks-*``) the same run executes unscored (what
  ``--scenario tasks-... --force`` runs one by one, at one suite start-up each);
- ``conformance-server-legacy`` with ``--spec-version 2025-11-25``: the legacy era.

A check that fails for a defect of mockmcp not yet fixed is listed in ``KNOWN_DEFECTS`` with the
defect: it must keep failing (when it passes, the defect is fixed and its entry goes), and its own
regression test below is ``xfail(strict=True)``.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from interop import tsclient
from support.httpmock import HttpClient, HttpMock

CONFORMANCE_DIR = Path(__file__).resolve().parent / "conformance"
PACKAGE = "@modelcontextprotocol/conformance"
NODE = CONFORMANCE_DIR / "node_modules" / ".bin" / "node"  # Node 22, from the `node` package
CLI = CONFORMANCE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

TASKS_SCENARIOS = frozenset({
    "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
    "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-status-notifications",
    "tasks-required-task-error", "tasks-mrtr-composition",
})

# (scenario, check id) -> the defect that makes it fail today
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}

_RESULT_DIR = re.compile(r"server-(?P<name>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z")


@pytest.fixture(scope="module")
def conformance_suite() -> list[str]:
    """The suite's command line (Node 22 and its CLI), installed from the committed lockfile if it is
    not yet; without Node and npm, the one line naming what to install."""
    try:
        tsclient.ensure(CONFORMANCE_DIR, PACKAGE)
    except tsclient.ClientUnavailable as exc:
        message = str(exc)
    else:
        return [str(NODE), str(CLI)]
    pytest.fail(message, pytrace=False)  # outside the except: the report is that line, no traceback


class SuiteRun:
    """One ``conformance server`` run: its output and every check it wrote, by scenario."""

    def __init__(self, output: str, checks: dict[str, list[dict[str, Any]]]) -> None:
        self.output, self.checks = output, checks

    def failed(self) -> list[tuple[str, str, str]]:
        """(scenario, check id, why) of every failed check (one id may fail more than once)."""
        return [(scenario, str(c.get("id")), str(c.get("errorMessage") or c.get("description") or ""))
                for scenario, checks in sorted(self.checks.items()) for c in checks if c.get("status") == "FAILURE"]

    def announced(self) -> int:
        """How many scenarios the suite said it would run (its first line)."""
        m = re.search(r"\((\d+) scenarios\)", self.output)
        assert m is not None, self.output[-2000:]
        return int(m.group(1))


def run_suite(command: list[str], scenario: str, out: Path, *args: str) -> SuiteRun:
    # --time-scale: the scripted delays (the tasks' timed phases, progress and log pauses) at a
    # tenth; every check the suite makes is about order and shape, not duration
    with HttpMock(scenario, "--time-scale", "0.1") as mock:
        proc = subprocess.run([*command, "server", "--url", mock.url, *args, "-o", str(out)],
                              capture_output=True, text=True, timeout=600)
        status = mock.stop()
        assert status == 0, f"the mock exited {status}: {mock.stderr()}"
    checks: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(out.glob("*/checks.json")):
        m = _RESULT_DIR.fullmatch(path.parent.name)
        assert m is not None, path
        checks[m.group("name")] = json.loads(path.read_text(encoding="utf-8"))
    return SuiteRun(proc.stdout + proc.stderr, checks)


def assert_no_failures(run: SuiteRun) -> None:
    failed = run.failed()
    keys = {(scenario, check) for scenario, check, _ in failed}
    fixed = sorted(key for key in KNOWN_DEFECTS if key[0] in run.checks and key not in keys)
    unexpected = [(scenario, check, why) for scenario, check, why in failed if (scenario, check) not in KNOWN_DEFECTS]
    report = "\n".join(f"  {scenario} / {check}: {why}" for scenario, check, why in unexpected)
    assert not unexpected, f"{len(unexpected)} failed check(s):\n{report}\n--- suite output (tail):\n{run.output[-3000:]}"
    assert not fixed, f"known defects now pass (remove them from KNOWN_DEFECTS and their xfail): {fixed}"


@pytest.mark.slow
@pytest.mark.interop
def test_server_suite_2026_07_28_and_tasks(conformance_suite: list[str], tmp_path: Path) -> None:
    run = run_suite(conformance_suite, "conformance-server", tmp_path / "results", "--requirements", "2026-07-28")
    assert len(run.checks) == run.announced(), sorted(run.checks)
    assert TASKS_SCENARIOS <= set(run.checks), sorted(TASKS_SCENARIOS - set(run.checks))
    assert sum(len(c) for c in run.checks.values()) >= 190, "fewer checks than the fixtures are known to pass"
    assert_no_failures(run)


@pytest.mark.slow
@pytest.mark.interop
def test_server_suite_2025_11_25(conformance_suite: list[str], tmp_path: Path) -> None:
    run = run_suite(conformance_suite, "conformance-server-legacy", tmp_path / "results", "--spec-version", "2025-11-25")
    assert len(run.checks) == run.announced(), sorted(run.checks)
    assert {"server-initialize", "tools-call-sampling", "tools-call-elicitation", "tools-call-with-logging",
            "elicitation-sep1034-defaults", "elicitation-sep1330-enums"} <= set(run.checks)
    assert sum(len(c) for c in run.checks.values()) >= 60, "fewer checks than the fixtures are known to pass"
    assert_no_failures(run)


# ---------------------------------------------------------------- defects the suite found


def test_task_created_by_the_last_input_required_round_sees_its_answers() -> None:
    """tasks-mrtr-composition: test_tool_with_task asks for a name (input_required), and the retry
    that answers it is answered with a task; the task's result must use the answer (the task keeps
    the creating round's answers: core/tasks/records.py's ``creating_round``)."""
    with HttpMock("conformance-server", "--time-scale", "0.1") as mock:
        client = HttpClient(mock, caps={"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
        first = client.call("test_tool_with_task")["result"]
        assert first["resultType"] == "input_required" and "user_name" in first["inputRequests"], first
        retry = client.ask("tools/call", {
            "name": "test_tool_with_task", "arguments": {}, "requestState": first["requestState"],
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
        })["result"]
        assert retry["resultType"] == "task" and "requestState" not in retry, retry
        deadline = time.monotonic() + 10
        task = client.get(retry["taskId"])["result"]
        while task["status"] not in ("completed", "failed", "cancelled") and time.monotonic() < deadline:
            time.sleep(0.05)
            task = client.get(retry["taskId"])["result"]
        assert task["status"] == "completed", task
        assert "Alice" in task["result"]["content"][0]["text"], task
