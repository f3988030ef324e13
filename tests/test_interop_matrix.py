"""The interop matrix machinery, run for the ``default`` scenario with all three clients.

The full matrix (every bundled scenario) is a command whose output,
docs/interop.md, is committed; this test keeps the machinery honest: the
generic plan covers the scenario, every client completes it, and the table and
notes say what happened.
"""

from __future__ import annotations

from typing import Any

import pytest

from interop import matrix
from mockmcp import loader

pytestmark = pytest.mark.interop


def test_generic_plan_covers_the_scenario() -> None:
    scenario, _ = loader.load("default", use_cache=False)
    plan = matrix.generic_plan(scenario, ["mock"])
    ops = [(o["op"], o.get("name") or o.get("uri")) for o in plan["ops"]]
    assert ("callTool", "echo") in ops and ("callTool", "add") in ops and ("callTool", "get_weather") in ops
    assert ("getPrompt", "code_review") in ops
    assert ("readResource", "file:///project/logo.png") in ops
    assert ("readResource", "weather://forecast/example") in ops
    calls = {o["name"]: o["arguments"] for o in plan["ops"] if o["op"] == "callTool"}
    assert calls["echo"] == {"text": "example"}
    assert calls["add"] == {"a": 1.0, "b": 1.0}  # numbers, so the add rule that sums answers
    assert matrix.instantiate("x://{a}/b{?q,r}") == "x://example/b"


def test_default_scenario_with_every_client() -> None:
    results = matrix.run_matrix(["default"], list(matrix.CLIENTS), jobs=2)
    cells = results["default"]
    for client in matrix.CLIENTS:
        cell = cells[client]
        assert "crash" not in cell, cell
        assert cell["connect"]["status"] == "ok", cell["connect"]
        assert cell["connect"]["protocolVersion"] == "2026-07-28"
        assert [o["status"] for o in cell["ops"]] == ["ok"] * len(cell["plan"]), cell["ops"]
        by_name = {o.get("name"): o for o in cell["ops"] if o["op"] == "callTool"}
        assert by_name["add"]["result"]["structuredContent"] == {"sum": 2.0}
        assert by_name["get_weather"]["result"]["content"][0]["text"] == "Sunny, 22°C in example"
        assert cell["report"] is not None and cell["report"]["counts"]["findings"]["error"] == 0
        assert cell["inbound"].get("initialize", 0) == 0
    # the TypeScript client in auto mode spawns a probe and a session; Python discovers in-process
    assert cells["typescript"]["processes"] == 2
    assert cells["python-asyncio"]["processes"] == 1 and cells["python-trio"]["processes"] == 1

    text = matrix.render(results, list(matrix.CLIENTS), matrix.installed_versions(), "2026-01-01")
    row = next(line for line in text.splitlines() if line.startswith("| `default`"))
    n = len(cells["typescript"]["plan"])
    assert row == f"| `default` | {n} ok | {n} ok | {n} ok |"
    assert "Generated 2026-01-01 with mcp 2.3.0" in text and "@modelcontextprotocol/client 2.4.0" in text
    assert "tests/interop/matrix.py" in text.splitlines()[5]


def _cell(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"connect": {"status": "ok", "era": "modern", "protocolVersion": "2026-07-28"},
                            "ops": [], "report": {"counts": {"expectations": {"passed": 0, "failed": 0},
                                                             "findings": {"error": 0}},
                                                  "expectations": [], "findings": []},
                            "inbound": {}, "hasExpectations": False}
    base.update(kw)
    return base


def test_every_non_ok_cell_gets_a_note() -> None:
    cell = _cell(ops=[{"op": "callTool", "name": "slow", "status": "timeout"},
                      {"op": "callTool", "name": "bad", "status": "error", "code": -32603, "message": "boom"},
                      {"op": "listTools", "status": "ok"}],
                 inbound={"notifications/cancelled": 1})
    text, notes = matrix.summarize(cell)
    assert text == "1 ok; 1 error -32603; 1 timeout"
    assert len(notes) == 2 and "notifications/cancelled ×1" in notes[0] and "-32603" in notes[1]

    fallback = _cell(connect={"status": "ok", "protocolVersion": "2025-11-25"})
    text, notes = matrix.summarize(fallback)
    assert text.startswith("fallback to 2025-11-25") and notes

    failed = _cell(hasExpectations=True)
    failed["report"]["counts"]["expectations"] = {"passed": 1, "failed": 1}
    failed["report"]["expectations"] = [{"id": "a", "verdict": "passed"}, {"id": "b", "verdict": "failed"}]
    text, notes = matrix.summarize(failed)
    assert "expectations failed 1" in text and len(notes) == 1 and '"b"' in notes[0]

    assert matrix.summarize({"crash": "driver exited 2", "stderr": "boom"})[0] == "crash"
    assert matrix.summarize({"loadError": "x.yaml:1:1: bad"})[0] == "scenario does not load"


LISTEN_SCENARIO = """\
mockmcp: 1
description: a resource that changes every 200 ms
resources:
  - {uri: "clock://now", name: clock, text: tick}
subscriptions:
  timers:
    - emit: {event: resources/updated, uri: "clock://now"}
      after: 100ms
      every: 200ms
      count: 20
"""


@pytest.mark.parametrize("client", ["python-trio", "typescript"])
def test_listen_op_receives_events(client: str, tmp_path: Any) -> None:
    path = tmp_path / "clock.yaml"
    path.write_text(LISTEN_SCENARIO)
    cell = matrix.run_cell(path, client)
    (listen,) = [o for o in cell["ops"] if o["op"] == "listen"]
    assert listen["status"] == "ok", listen
    assert listen["result"]["honored"]["resourceSubscriptions"] == ["clock://now"]
    assert listen["result"]["events"] >= 2
    assert cell["inbound"]["subscriptions/listen"] == 1
    text, notes = matrix.summarize(cell)
    assert "listen: events received" in text and notes == []


def test_committed_matrix_covers_every_bundled_scenario() -> None:
    """docs/interop.md is generated by a command and committed; a new scenario needs a new run."""
    doc = (matrix.ROOT / "docs" / "interop.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().split()[0].strip("`") for line in doc.splitlines()
            if line.startswith("| `")}
    missing = sorted(set(loader.bundled_names()) - rows)
    assert not missing, (
        f"docs/interop.md has no row for {missing}: run `.venv/bin/python tests/interop/matrix.py` and commit it"
    )
    header = doc.splitlines()[:12]
    assert ".venv/bin/python tests/interop/matrix.py" in header
    assert any(line.startswith("Generated ") for line in header)


FAULT_SCENARIO = """\
mockmcp: 1
description: one good tool, one that never answers, one that kills the server, one after that
tools:
  - name: a_ok
    replies: [{steps: [{text: fine}]}]
  - name: b_hang
    replies: [{steps: [{hang: true}]}]
  - name: c_die
    replies: [{steps: [{exit: {status: 3}}]}]
  - name: d_after
    replies: [{steps: [{text: never}]}]
"""


@pytest.mark.parametrize("client", ["python-asyncio", "typescript"])
def test_timeouts_and_a_dead_server_are_recorded(client: str, tmp_path: Any) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(FAULT_SCENARIO)
    cell = matrix.run_cell(path, client, timeout_ms=1000)
    status = {o.get("name", o["op"]): (o["status"], o["session"]) for o in cell["ops"]}
    assert status["listTools"] == ("ok", 1) and status["a_ok"] == ("ok", 1)
    assert status["b_hang"] == ("timeout", 1)
    # after the timeout, a new session; the server dies under c_die, so d_after gets a third one
    assert status["c_die"][0] != "ok" and status["c_die"][1] == 2
    assert status["d_after"] == ("ok", 3)
    assert cell["sessions"] == 3
    assert cell["inbound"]["notifications/cancelled"] == 1  # the client cancelled the hung call
    assert cell["report"] is not None  # the first session ended normally (the client closed it)
    text, notes = matrix.summarize(cell)
    assert "1 timeout" in text and "3 sessions" in text
    assert any(n.startswith("callTool c_die:") for n in notes)
    assert any(n.startswith("callTool b_hang:") and "cancelled ×1" in n for n in notes)


def test_a_session_that_dies_leaves_no_report(tmp_path: Any) -> None:
    path = tmp_path / "die.yaml"
    path.write_text("mockmcp: 1\ntools:\n  - name: die\n    replies: [{steps: [{exit: {status: 3}}]}]\n")
    cell = matrix.run_cell(path, "typescript", timeout_ms=1000)
    assert [o["status"] for o in cell["ops"]] == ["ok", "client-error"]
    assert cell["sessions"] == 1 and cell["processes"] == 1  # only the probe wrote a report
    assert cell["report"] is None
    assert "mock: no report" in matrix.summarize(cell)[0]


def test_tool_arguments_prefer_the_schema_examples() -> None:
    schema = {"type": "object", "examples": [{"from": "CDG", "passengers": 2}],
              "properties": {"from": {"type": "string"}, "passengers": {"type": "integer"}}}
    assert matrix.example_from_schema(schema) == {"from": "CDG", "passengers": 2}
    schema.pop("examples")
    schema["properties"]["from"]["examples"] = ["ORY"]
    schema["properties"]["passengers"]["default"] = 3
    assert matrix.example_from_schema(schema) == {"from": "ORY", "passengers": 3}
