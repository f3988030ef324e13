"""End to end: the official Python and TypeScript SDKs and deliberately buggy clients drive a real mock process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.messages import line, request
from support.process import mockmcp_cmd, run_mock

from mockmcp.verify.journal import read_journal

BUGGY = Path(__file__).resolve().parents[1] / "buggy_clients"

SCENARIO = """\
mockmcp: 1
description: verification end-to-end
tools:
  - name: echo
    inputSchema: {type: object, properties: {text: {type: string}}}
    replies:
      - steps: [{text: "{{ arguments.text }}"}]
  - name: greet
    inputSchema: {type: object}
    replies:
      - name: ask-name
        when: {round: 1}
        steps:
          - inputRequired:
              inputRequests:
                name:
                  method: elicitation/create
                  params:
                    mode: form
                    message: Your name?
                    requestedSchema: {type: object, properties: {name: {type: string}}}
      - name: say-hello
        steps: [{text: "hello {{ inputResponses.name.content.name }}"}]
  - name: slow
    inputSchema: {type: object}
    replies:
      - steps: [{sleep: 300ms}, {text: done}]
  - name: weather
    inputSchema: {type: object}
    replies:
      - name: paris
        when: {arguments: {city: Paris}}
        steps: [{text: sunny}]
expectations:
  - {id: discover, method: server/discover, before: greet}
  - {id: greet, method: tools/call, name: greet, exactly: 1}
  - {method: tools/call, name: echo, arguments: {text: hello}, exactly: 1}
  - {method: tools/call, name: slow, never: true}
  - {method: initialize, never: true}
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "verify.yaml"
    path.write_text(SCENARIO)
    return path


def mock_args(scenario: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["run", str(scenario), "--journal", str(tmp_path / "j.jsonl"), "--report", str(tmp_path / "r.json"), *extra]


def records(path: Path) -> list[dict[str, Any]]:
    """The journal so far (empty until the mock has created it)."""
    return read_journal(path) if path.exists() else []


def report(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "r.json").read_text())


# ---------------------------------------------------------------- the official SDK


async def drive_with_sdk(argv: list[str]) -> list[str]:
    from mcp import Client, StdioServerParameters, types

    async def elicit(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    server = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(server, elicitation_callback=elicit) as client:
        tools = await client.list_tools()
        echoed = await client.call_tool("echo", {"text": "hello"})
        greeted = await client.call_tool("greet", {})
    return [t.name for t in tools.tools] + [echoed.content[0].text, greeted.content[0].text]


def _check_clean(tmp_path: Path, schema: Any) -> None:
    r = report(tmp_path)
    assert r["findings"] == [], r["findings"]
    assert [v["verdict"] for v in r["expectations"]] == ["passed"] * 5, r["expectations"]
    assert r["ok"] is True
    assert r["counts"]["requests"] >= 4
    recs = read_journal(tmp_path / "j.jsonl")
    methods = {json.dumps(r["message"]["id"]): r["message"]["method"] for r in recs if r["dir"] == "in" and "id" in r["message"]}
    outs = [r for r in recs if r["dir"] == "out"]
    assert outs
    for rec in outs:  # every line the mock wrote is valid for the revision
        msg = rec["message"]
        schema.check(msg, methods.get(json.dumps(msg.get("id"))))
    rules = [rec.get("rule") for rec in outs]
    assert "ask-name" in rules and "say-hello" in rules  # the journal names the rule that answered


@pytest.mark.interop
def test_python_sdk_on_asyncio_gets_a_clean_report(scenario: Path, tmp_path: Path, schema: Any) -> None:
    argv = mockmcp_cmd(*mock_args(scenario, tmp_path, "--strict"))
    got = anyio.run(drive_with_sdk, argv, backend="asyncio")
    assert got == ["echo", "greet", "slow", "weather", "hello", "hello Ada"]
    _check_clean(tmp_path, schema)


@pytest.mark.interop
async def test_python_sdk_on_trio_gets_a_clean_report(scenario: Path, tmp_path: Path, schema: Any) -> None:
    got = await drive_with_sdk(mockmcp_cmd(*mock_args(scenario, tmp_path)))
    assert got[-1] == "hello Ada"
    _check_clean(tmp_path, schema)


# ---------------------------------------------------------------- deliberately buggy clients


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("reused_id", "id.reused"),
        ("dropped_state", "mrtr.requestState.dropped"),
        ("altered_state", "mrtr.requestState.altered"),
        ("missing_meta", "meta.missing"),
        ("response_to_server", "jsonrpc.response"),
        ("leaked_input_responses", "mrtr.leak"),
        ("retry_same_id", "mrtr.retry.sameId"),
    ],
)
def test_buggy_client_produces_exactly_the_expected_finding(client: str, expected: str, scenario: Path, tmp_path: Path, schema: Any) -> None:
    argv = mockmcp_cmd(*mock_args(scenario, tmp_path, "--strict"))
    proc = subprocess.run([sys.executable, str(BUGGY / f"{client}.py"), *argv], capture_output=True, timeout=60)
    assert proc.returncode == 1, proc.stderr.decode()  # --strict: an error-level finding
    for out in proc.stdout.decode().splitlines():
        got = json.loads(out)
        schema.check(got["message"], got["method"])
    r = report(tmp_path)
    assert [f["check"] for f in r["findings"]] == [expected], r["findings"]
    finding = r["findings"][0]
    assert finding["level"] == "error"
    assert finding["spec"].startswith("https://modelcontextprotocol.io/specification/2026-07-28/")
    assert finding["message"]  # the offending message itself
    assert expected in proc.stderr.decode()  # the summary names it
    journal = read_journal(tmp_path / "j.jsonl")
    assert [rec["finding"]["check"] for rec in journal if rec["dir"] == "finding"] == [expected]


# ---------------------------------------------------------------- report, strict, signals


def test_unmatched_request_is_a_finding_with_a_near_miss(scenario: Path, tmp_path: Path) -> None:
    res = run_mock(*mock_args(scenario, tmp_path), input=line(request(1, "tools/call", {"name": "weather", "arguments": {"city": "Oslo"}})))
    assert res.returncode == 0  # not strict
    (f,) = report(tmp_path)["findings"]
    assert f["check"] == "expect.unmatched" and f["id"] == 1
    assert f["nearMiss"] == {"rule": "paris", "reason": 'argument \'city\' is "Oslo", rule wants "Paris"'}
    assert "closest: paris" in f["text"]


def test_strict_fails_on_a_failed_expectation_only_when_asked(scenario: Path, tmp_path: Path) -> None:
    clean = line(request(1, "server/discover"))
    res = run_mock(*mock_args(scenario, tmp_path), input=clean)
    assert res.returncode == 0
    r = report(tmp_path)
    assert r["ok"] is False and r["findings"] == []
    failed = [v for v in r["expectations"] if v["verdict"] == "failed"]
    assert [v["expectation"] for v in failed] == ["greet", "expectations[2]"]
    assert "greet: tools/call greet exactly 1 time: seen 0 times, expected exactly 1" in res.stderr.decode()
    res = run_mock(*mock_args(scenario, tmp_path, "--strict"), input=clean)
    assert res.returncode == 1
    assert b"--strict: exiting with status 1" in res.stderr


def test_warnings_do_not_fail_strict(tmp_path: Path, scenario: Path) -> None:
    msg = request(1, "tools/call", {"name": "echo", "arguments": {"text": "hello"}})
    del msg["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]
    tail = line(request(2, "server/discover")) + line(request(3, "tools/call", {"name": "greet"}))
    res = run_mock(*mock_args(scenario, tmp_path, "--strict"), input=line(request(0, "server/discover")) + line(msg) + tail)
    r = report(tmp_path)
    assert [f["check"] for f in r["findings"]] == ["meta.clientInfo.missing"]
    assert r["counts"]["findings"] == {"error": 0, "warning": 1, "note": 0}
    assert r["ok"] is True and res.returncode == 0


def test_sigterm_writes_the_report(scenario: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(mockmcp_cmd(*mock_args(scenario, tmp_path)), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    proc.stdin.write(line(request(1, "server/discover")) + line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    deadline = time.monotonic() + 20
    while not any(r["dir"] == "finding" for r in records(tmp_path / "j.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)  # stdin still open
    _, err = proc.communicate(timeout=20)
    r = report(tmp_path)
    assert [f["check"] for f in r["findings"]] == ["removed.initialized"]
    assert r["counts"]["requests"] == 1 and r["counts"]["notifications"] == 1
    assert b"mockmcp: verification: 1 requests" in err


def test_report_path_may_name_the_process(scenario: Path, tmp_path: Path) -> None:
    res = run_mock("run", str(scenario), "--report", str(tmp_path / "r-{pid}.json"), input=b"")
    assert res.returncode == 0
    (path,) = tmp_path.glob("r-*.json")
    assert path.name[2:-5].isdigit()
    assert json.loads(path.read_text())["pid"] == int(path.name[2:-5])


def test_plain_runs_do_not_load_the_verifier(scenario: Path) -> None:
    code = (
        "import sys, runpy; sys.argv=['mockmcp','run',%r]; "
        "import mockmcp.cli.main as c; rc=c.main(sys.argv[1:]); "
        "print('verify' if 'mockmcp.verify.verifier' in sys.modules else 'plain', file=sys.stderr)" % str(scenario)
    )
    res = subprocess.run([sys.executable, "-c", code], input=b"", capture_output=True, timeout=30)
    assert res.stderr.decode().strip().endswith("plain")


def test_undefined_tools_and_methods_are_unmatched_with_the_closest_name(scenario: Path, tmp_path: Path) -> None:
    msgs = [
        request(1, "tools/call", {"name": "ecko", "arguments": {}}),
        request(2, "tools/lst"),
        request(3, "ping"),  # removed: its own finding, not an unmatched one
    ]
    res = run_mock(*mock_args(scenario, tmp_path), input=b"".join(line(m) for m in msgs))
    assert res.returncode == 0
    found = report(tmp_path)["findings"]
    assert [(f["check"], f.get("id")) for f in found] == [("removed.ping", 3), ("expect.unmatched", 1), ("expect.unmatched", 2)]
    assert found[1]["nearMiss"]["rule"] == "echo"
    assert "asks for tool 'ecko', which the scenario does not define; closest: 'echo'" in found[1]["text"]
    assert found[2]["nearMiss"]["rule"] == "tools/list"


def test_cancellation_is_journaled_and_a_stale_cancel_is_a_note(scenario: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(mockmcp_cmd(*mock_args(scenario, tmp_path, "--strict")), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "user"}}
    proc.stdin.write(line(request(1, "tools/call", {"name": "slow"})) + line(cancel))
    proc.stdin.flush()
    deadline = time.monotonic() + 20
    while not any(r["dir"] == "event" for r in records(tmp_path / "j.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.stdin.write(line(cancel) + line(request(1, "tools/list")))  # the id is free again after the cancel
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    out, _ = proc.communicate(b"", timeout=20)
    assert out == b""  # nothing more for the cancelled call
    assert proc.returncode == 1  # strict: the expectations (discover, greet, echo) were not met
    r = report(tmp_path)
    assert [(f["check"], f["level"]) for f in r["findings"]] == [("cancel.unknown", "note")]
    assert r["counts"]["cancelled"] == 1
    events = [rec for rec in read_journal(tmp_path / "j.jsonl") if rec["dir"] == "event"]
    assert [(e["kind"], e["id"], e["reason"]) for e in events] == [("cancelled", 1, "user")]


# ---------------------------------------------------------------- the official TypeScript SDK

TS_DIR = Path(__file__).resolve().parents[1] / "interop" / "ts"

TS_CLIENT = r"""
const { createRequire } = require('node:module');
const [tsDir, ...argv] = process.argv.slice(2);
const load = createRequire(tsDir + '/package.json');
const { Client } = load('@modelcontextprotocol/client');
const { StdioClientTransport } = load('@modelcontextprotocol/client/stdio');
(async () => {
  const client = new Client(
    { name: 'mockmcp-verify-ts', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
  await client.connect(new StdioClientTransport({ command: argv[0], args: argv.slice(1) }));
  await client.listTools();
  const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
  const greeted = await client.callTool({ name: 'greet', arguments: {} });
  await client.close();
  console.log(JSON.stringify([echoed.content[0].text, greeted.content[0].text]));
})().catch((e) => { console.error(e); process.exit(1); });
"""


@pytest.mark.interop
@pytest.mark.usefixtures("typescript_client")
def test_typescript_sdk_two_processes_one_journal_a_report_each(scenario: Path, tmp_path: Path) -> None:
    script = tmp_path / "client.cjs"
    script.write_text(TS_CLIENT)
    argv = mockmcp_cmd("run", str(scenario), "--journal", str(tmp_path / "j.jsonl"), "--report", str(tmp_path / "r-{pid}.json"))
    proc = subprocess.run(["node", str(script), str(TS_DIR), *argv], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == ["hello", "hello Ada"]
    reports = {}
    for _ in range(100):  # the SDK may return before the probe process has finished exiting
        reports = {p.name: json.loads(p.read_text()) for p in tmp_path.glob("r-*.json")}
        if len(reports) == 2:
            break
        time.sleep(0.05)
    assert len(reports) == 2  # a discover probe, then the session
    assert all(r["findings"] == [] for r in reports.values()), reports
    session = max(reports.values(), key=lambda r: r["counts"]["requests"])
    verdicts = {v["expectation"]: v["verdict"] for v in session["expectations"]}
    assert verdicts["greet"] == "passed" and verdicts["expectations[2]"] == "passed"
    recs = read_journal(tmp_path / "j.jsonl")
    assert {r["pid"] for r in recs} == {r["pid"] for r in reports.values()}


@pytest.mark.parametrize("kind", ["run", "run --http", "proxy"])
def test_a_report_that_cannot_be_written_stops_the_start_with_one_line(tmp_path: Path, kind: str) -> None:
    """A folder, a folder that does not exist, a file where the folder should be: status 2 and the
    reason at start-up (before: the run went on, and said so at exit, with status 0)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    server = [sys.executable, "-m", "mockmcp", "run", "default"]
    for target, why in ((tmp_path, "it is a folder"), (tmp_path / "missing" / "r.json", f"its folder {tmp_path / 'missing'} does not exist"),
                        (blocker / "r.json", f"{blocker} is not a folder")):
        args = {
            "run": ["run", "default", "--report", str(target)],
            "run --http": ["run", "default", "--http", "127.0.0.1:0", "--report", str(target)],
            "proxy": ["proxy", "--report", str(target), "--", *server],
        }[kind]
        proc = run_mock(*args, timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and err == f"mockmcp: error: --report: cannot write {target}: {why}\n", err
        assert not (tmp_path / "missing").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_report_that_cannot_be_written_at_exit_leaves_no_temporary_file(tmp_path: Path) -> None:
    """Writable at start-up, a folder in its place by the end: said, and nothing left beside it."""
    report = tmp_path / "r.json"
    proc = subprocess.Popen(mockmcp_cmd("run", "default", "--report", str(report)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line(request(1, "server/discover")))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # (started: the report's path was checked)
    report.mkdir()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and f"cannot write the report {report}".encode() in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_lone_surrogate_from_the_client_reaches_every_report_as_its_escape(tmp_path: Path) -> None:
    """JSON lets a client send ``\\ud800``; a finding quotes the request. Before, writing the report
    raised UnicodeEncodeError at exit (no report, a traceback), and so did ``mockmcp report`` (a
    method's name) and its ``--json``, ``mockmcp journal`` (a cancel's reason) and ``--html``."""
    name = "\ud800é"
    from support.messages import META

    bare = {k: v for k, v in META.items() if not k.endswith("/clientInfo")}  # (its finding quotes the whole request)
    calls = (line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": bare}})
             + line(request(2, "tools/call", {"name": "slow", "arguments": {}}))
             + line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": name}})
             + line(request(3, name + "/x")))  # (a method name is quoted as it is, not as repr)
    report, session = tmp_path / "r.json", tmp_path / "s"
    proc = run_mock("run", "faults", "--report", str(report), input=calls)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    found = json.loads(report.read_text(encoding="utf-8"))["findings"]
    assert any((f.get("message") or {}).get("params", {}).get("name") == name for f in found), found
    assert run_mock("run", "faults", "--session", str(session), input=calls).returncode == 0
    judged = run_mock("report", str(session), "--json")
    assert judged.returncode == 1 and b"Traceback" not in judged.stderr, judged.stderr  # (not ok: an unknown tool)
    assert any("\\ud800é" in f["text"] for f in json.loads(judged.stdout.decode("utf-8"))["findings"])
    told = run_mock("report", str(session))
    assert told.returncode == 1 and b"Traceback" not in told.stderr, told.stderr
    assert "asks for method '\\ud800é/x'" in told.stdout.decode("utf-8")
    journal = session / "journal.jsonl"
    shown = run_mock("journal", str(journal))
    assert shown.returncode == 0 and "\\ud800é" in shown.stdout.decode("utf-8"), shown.stderr
    drawn = run_mock("journal", str(journal), "--html", str(tmp_path / "t.html"))
    assert drawn.returncode == 0 and "\\ud800é" in (tmp_path / "t.html").read_text(encoding="utf-8"), drawn.stderr
