"""``mockmcp schema report|journal|control`` describe what a real mock writes: one process run with
--session (its journal), --report and --control, every control operation (but the task ones, which
need a task: their error answer is checked instead) validated against the control schema, every
journal record and both reports (the process's, and ``mockmcp report DIR --json --per-process``)
against theirs. The TypeScript package's types are generated from these schemas, so this is what
keeps those types true."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.messages import line, request
from support.process import mockmcp_cmd

from mockmcp.cli.outputschemas import SCHEMAS
from mockmcp.controlclient import ControlError, SyncControl


def _validator(name: str, ref: str | None = None) -> jsonschema.Draft202012Validator:
    schema = SCHEMAS[name]()
    jsonschema.Draft202012Validator.check_schema(schema)
    if ref is not None:
        schema = {**schema, "$ref": f"#/$defs/{ref}"}
        schema.pop("properties", None), schema.pop("required", None), schema.pop("additionalProperties", None)
    return jsonschema.Draft202012Validator(schema)


def _check(validator: jsonschema.Draft202012Validator, value: Any, what: str) -> None:
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)]
    assert not problems, f"{what}: {problems}"


def test_the_command_prints_each_schema() -> None:
    proc = subprocess.run(mockmcp_cmd("schema", "control", "--indent", "0"), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == SCHEMAS["control"]()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("out")
    sock, session, report = tmp / "c.sock", tmp / "s", tmp / "r.json"
    proc = subprocess.Popen(
        mockmcp_cmd("run", "conformance-tool-arguments", "--control", str(sock), "--session", str(session),
                    "--report", str(report)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    ctl = SyncControl(str(sock))
    answers: dict[str, Any] = {}

    def op(name: str, params: dict[str, Any]) -> None:
        answers[name] = ctl.call(name, params)

    op("ping", {})
    proc.stdin.write(line(request(1, "server/discover")))
    proc.stdin.write(line(request(2, "tools/call", {"name": "book_flight", "arguments": {"from": "CDG", "to": "x", "passengers": "2"}})))
    proc.stdin.flush()
    proc.stdout.readline(), proc.stdout.readline()
    op("waitFor", {"when": {"method": "tools/call"}, "timeout": 10, "since": 0})
    op("emit", {"event": "tools/list_changed"})
    op("add", {"kind": "tool", "definition": {"name": "wave", "replies": [{"steps": [{"text": "o/"}]}]}})
    op("replace", {"kind": "tool", "definition": {"name": "wave", "replies": [{"steps": [{"text": "\\o"}]}]}})
    op("remove", {"kind": "tool", "key": "wave"})
    op("getState", {})
    op("setState", {"state": "later"})
    op("arm", {"when": {"method": "tools/call", "name": "book_flight"}, "steps": [{"error": {"code": -32000, "message": "down"}}]})
    op("counters", {})
    op("disarm", {})
    op("listTasks", {})
    op("pause", {"seconds": 5})
    op("resume", {})
    op("journal", {"since": 0, "limit": 10})
    with pytest.raises(ControlError) as missing:
        ctl.call("getTask", {"taskId": "nope"})
    op("shutdown", {})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    judged = subprocess.run(mockmcp_cmd("report", str(session), "--json", "--per-process"), capture_output=True, text=True, timeout=60)
    return {"answers": answers, "error": missing.value, "journal": session / "journal.jsonl", "report": report, "session": judged}


def test_every_control_answer_fits_its_operation(run: dict[str, Any]) -> None:
    schema = SCHEMAS["control"]()
    # (the authorization operations need auth over HTTP: tests/shells/test_http_auth_control.py checks their answers)
    auth = {"expireTokens", "revokeTokens", "requireScope", "listAuthorizations", "approveAuthorization",
            "denyAuthorization", "setAuthMetadata", "migrate"}
    assert set(run["answers"]) | {"getTask", "setTask"} | auth == set(schema["properties"])
    for name, result in run["answers"].items():
        ref = schema["properties"][name]["properties"]["result"]["$ref"].rsplit("/", 1)[1]
        _check(_validator("control", ref), result, name)
    error = run["error"]
    _check(_validator("control", "ErrorObject"), {"code": error.code, "message": error.message, "data": error.data}, "error")


def test_every_journal_record_and_both_reports_fit(run: dict[str, Any]) -> None:
    records = [json.loads(x) for x in run["journal"].read_text().splitlines()]
    assert {r["dir"] for r in records} >= {"start", "in", "out", "finding", "verdict"}  # every kind the schema names but event
    journal = _validator("journal")
    for i, record in enumerate(records):
        _check(journal, record, f"journal record {i}")
    report = _validator("report")
    process = json.loads(run["report"].read_text())
    assert process["findings"] and not process["ok"]
    _check(report, process, "--report")
    assert run["session"].returncode == 1, run["session"].stderr
    session = json.loads(run["session"].stdout)
    assert session["perProcess"]
    _check(report, session, "mockmcp report DIR --json --per-process")


def test_an_indent_past_the_bound_is_an_argument_error() -> None:
    """(A width of billions was a MemoryError's traceback.)"""
    for width, status in (("16", 0), ("17", 2), ("99999999999", 2)):
        proc = subprocess.run(mockmcp_cmd("schema", "journal", "--indent", width), capture_output=True, text=True, timeout=60)
        assert proc.returncode == status and "Traceback" not in proc.stderr, proc.stderr
        if status:
            assert f"expected a whole number from 0 to 16, got '{width}'" in proc.stderr
