"""The conformance-style and stdio-only scenarios against the official Python SDK client (mcp==2.3.0).

Each test spawns ``sys.executable -m mockmcp run scenarios/NAME.yaml --journal J --report R``
through the SDK's stdio transport, drives it like an application would, and
then asserts the mock's verdict on the client: the report's expectations and
findings. Where mcp 2.3.0 does not do what the spec asks, the test asserts the
failing verdict it actually gets and says why (the scenario's header comment
and docs/cookbook.md say it too): a failing cell is documented, never skipped.

Every line the mock wrote that is meant to be valid is checked against the
official schema; the deliberately broken ones (``raw`` fault writes) are not.

Deliberately wrong raw-JSON clients (tests/buggy_clients/conformance_*.py)
show that the same scenarios fail when the client is wrong, and reference
raw clients (tests/buggy_clients/reference_*.py) that the two scenarios the
Python SDK fails can be passed.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pydantic
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mockmcp.verify.journal import read_journal
from support.process import mockmcp_prefix

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
BUGGY = Path(__file__).resolve().parents[1] / "buggy_clients"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Mock:
    """One conformance scenario: spawn parameters, a journal shared by every process, a report per process."""

    def __init__(self, tmp_path: Path, name: str, *extra: str) -> None:
        self.scenario = SCENARIOS / f"{name}.yaml"
        assert self.scenario.exists(), self.scenario
        self.dir = tmp_path / name
        self.dir.mkdir()
        self.journal = self.dir / "journal.jsonl"
        self.argv = [
            *mockmcp_prefix(), "run", str(self.scenario),
            "--journal", str(self.journal), "--report", str(self.dir / "report-{pid}.json"), *extra,
        ]
        self.params = StdioServerParameters(command=self.argv[0], args=self.argv[1:])

    def records(self) -> list[dict[str, Any]]:
        return read_journal(self.journal)

    def pids(self) -> list[int]:
        return [r["pid"] for r in self.records() if r["dir"] == "start"]

    def report(self, pid: int | None = None) -> dict[str, Any]:
        """The report of process ``pid`` (default: the last process started)."""
        pid = pid if pid is not None else self.pids()[-1]
        path = self.dir / f"report-{pid}.json"
        assert path.exists(), f"no report from process {pid}: {sorted(p.name for p in self.dir.iterdir())}"
        return json.loads(path.read_text())

    def inbound(self, pid: int | None = None) -> list[dict[str, Any]]:
        return [r["message"] for r in self.records()
                if r["dir"] == "in" and "message" in r and (pid is None or r["pid"] == pid)]

    def check_outbound(self, schema: Any) -> list[dict[str, Any]]:
        """Every message the mock wrote (not the deliberate raw writes), validated against the official schema."""
        records = self.records()
        out = []
        for pid in {r["pid"] for r in records}:
            methods = {r["message"]["id"]: r["message"]["method"] for r in records
                       if r["pid"] == pid and r["dir"] == "in" and isinstance(r.get("message"), dict)
                       and "method" in r["message"] and "id" in r["message"]}
            for r in records:
                if r["pid"] == pid and r["dir"] == "out" and "message" in r:
                    schema.check(r["message"], methods.get(r["message"].get("id")))
                    out.append(r["message"])
        return out


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {v["expectation"]: v["verdict"] for v in report["expectations"]}


def errors(report: dict[str, Any]) -> list[str]:
    return [f["check"] for f in report["findings"] if f["level"] == "error"]


def assert_clean(report: dict[str, Any]) -> None:
    """The mock's verdict is a pass: every expectation passed, no error finding."""
    assert report["expectations"], "a conformance scenario judges the client through its expectations"
    failed = [v for v in report["expectations"] if v["verdict"] != "passed"]
    assert not failed, failed
    assert errors(report) == [], report["findings"]
    assert report["ok"] is True


def text_of(result: Any) -> str:
    return result.content[0].text


def accept(answer: dict[str, Any]) -> Any:
    """An elicitation callback that accepts with ``answer`` (and so declares the elicitation capability)."""

    async def callback(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=answer)

    return callback


# ------------------------------------------------------------------ conformance-style


async def test_request_state_echoed_exactly(tmp_path, schema):
    mock = Mock(tmp_path, "conformance-request-state")
    async with Client(mock.params, elicitation_callback=accept({"ok": True})) as client:
        result = await client.call_tool("confirm", {"action": "ship"})
    assert text_of(result) == 'confirmed ship (opaque: ünïcödé / + = " \\ ship)'
    report = mock.report()
    assert_clean(report)
    out = mock.check_outbound(schema)
    given = next(m["result"]["requestState"] for m in out if m.get("result", {}).get("resultType") == "input_required")
    retry = next(m for m in mock.inbound() if m.get("method") == "tools/call" and "inputResponses" in m["params"])
    assert retry["params"]["requestState"] == given


async def test_new_id_on_every_retry(tmp_path, schema):
    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Ada"} if "Name" in params.message else {"color": "teal"})

    mock = Mock(tmp_path, "conformance-retry-new-id")
    async with Client(mock.params, elicitation_callback=elicit) as client:
        assert text_of(await client.call_tool("two_rounds")) == "Ada likes teal"
    report = mock.report()
    assert_clean(report)
    every = next(v for v in report["expectations"] if v["expectation"] == "all")
    assert len(every["ids"]) == 3 and len(set(map(json.dumps, every["ids"]))) == 3
    mock.check_outbound(schema)


async def test_no_request_state_when_none_was_given(tmp_path, schema):
    mock = Mock(tmp_path, "conformance-no-request-state")
    async with Client(mock.params, elicitation_callback=accept({"name": "Ada"})) as client:
        assert text_of(await client.call_tool("ask_name")) == "hello Ada"
    report = mock.report()
    assert_clean(report)
    out = mock.check_outbound(schema)
    asked = [m for m in out if m.get("result", {}).get("resultType") == "input_required"]
    assert len(asked) == 1 and "requestState" not in asked[0]["result"]


async def test_no_leak_to_a_parallel_call(tmp_path, schema):
    echoed = trio.Event()

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        with trio.fail_after(10):
            await echoed.wait()  # the user answers only after the parallel call went out and came back
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    mock = Mock(tmp_path, "conformance-no-leak")
    seen: dict[str, str] = {}
    async with Client(mock.params, elicitation_callback=elicit) as client:
        async def greet() -> None:
            seen["greet"] = text_of(await client.call_tool("greet"))

        async def echo() -> None:
            with trio.fail_after(10):
                while not [m for m in mock.inbound() if m.get("method") == "tools/call"]:
                    await trio.sleep(0.02)  # greet is out first
            seen["echo"] = text_of(await client.call_tool("echo", {"text": "in parallel"}))
            echoed.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(greet)
            nursery.start_soon(echo)
    assert seen == {"greet": "hello Ada", "echo": "in parallel"}
    report = mock.report()
    assert_clean(report)
    calls = [m for m in mock.inbound() if m.get("method") == "tools/call"]
    assert [m["params"]["name"] for m in calls] == ["greet", "echo", "greet"]  # echo went out between the rounds
    mock.check_outbound(schema)


async def test_missing_result_type_is_not_treated_as_complete_by_the_python_client(tmp_path, schema):
    """A documented failing cell: mcp 2.3.0 rejects a result without resultType.

    The conformance suite wants it treated as complete; the SDK raises a
    validation error instead, so an application that uses the summary to
    publish never gets there and the mock's verdict is "failed".
    """
    mock = Mock(tmp_path, "conformance-missing-result-type")
    async with Client(mock.params) as client:
        try:
            summary = text_of(await client.call_tool("summary"))
        except pydantic.ValidationError as exc:  # the SDK refuses the result (resultType is required)
            rejected: Exception | None = exc
        else:
            rejected = None
            await client.call_tool("publish", {"text": summary})
    assert rejected is not None and "resultType" in str(rejected)
    report = mock.report()
    assert verdicts(report) == {"summary": "passed", "publish": "failed"}
    assert report["ok"] is False and errors(report) == []
    assert report["counts"]["rawWrites"] == 1
    mock.check_outbound(schema)


async def test_meta_on_every_request(tmp_path, schema):
    mock = Mock(tmp_path, "conformance-meta")
    async with Client(mock.params) as client:
        await client.list_tools()
        assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
    report = mock.report()
    assert_clean(report)
    assert [f for f in report["findings"] if f["check"].startswith("meta.")] == []
    requests = [m for m in mock.inbound() if "id" in m and "method" in m]
    assert {m["method"] for m in requests} >= {"server/discover", "tools/list", "tools/call"}
    mock.check_outbound(schema)


async def test_retry_after_32022_on_a_request_python_client_gives_up(tmp_path, schema):
    """A documented failing cell: mcp 2.3.0 retries -32022 only during connect, not on a later request."""
    mock = Mock(tmp_path, "conformance-version-retry")
    async with Client(mock.params) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("echo", {"text": "hi"})
        assert info.value.code == -32022
    report = mock.report()
    assert verdicts(report) == {"retried": "failed", "expectations[1]": "passed"}
    assert report["ok"] is False
    assert len([m for m in mock.inbound() if m.get("method") == "tools/call"]) == 1
    mock.check_outbound(schema)


async def test_tools_call_with_the_right_arguments(tmp_path, schema):
    mock = Mock(tmp_path, "conformance-tool-arguments")
    async with Client(mock.params) as client:
        result = await client.call_tool("book_flight", {"from": "CDG", "to": "NRT", "passengers": 2, "class": "economy"})
    assert text_of(result) == "booked 2 from CDG to NRT"
    assert_clean(mock.report())
    mock.check_outbound(schema)


async def test_elicitation_defaults_applied(tmp_path, schema):
    async def form(ctx: Any, params: Any) -> types.ElicitResult:
        # what a form UI does: every field starts at its schema default, and the user accepts
        props = params.requested_schema["properties"]
        return types.ElicitResult(action="accept", content={k: v["default"] for k, v in props.items()})

    mock = Mock(tmp_path, "conformance-elicitation-defaults")
    async with Client(mock.params, elicitation_callback=form) as client:
        assert text_of(await client.call_tool("register")) == "registered John Doe (30, 95.5, active, verified true)"
    assert_clean(mock.report())
    mock.check_outbound(schema)


async def test_elicitation_without_defaults_fails_the_scenario(tmp_path):
    # mcp==2.3.0 applies no defaults itself: a callback that accepts with {} sends {}
    mock = Mock(tmp_path, "conformance-elicitation-defaults")
    async with Client(mock.params, elicitation_callback=accept({})) as client:
        await client.call_tool("register")
    report = mock.report()
    assert report["ok"] is False
    assert {v["expectation"] for v in report["expectations"] if v["verdict"] == "failed"} == {"defaults", "expectations[2]"}


async def test_json_schema_2020_12_keywords_preserved(tmp_path, schema):
    import jsonschema
    import yaml

    mock = Mock(tmp_path, "conformance-schema-2020-12")
    declared = yaml.safe_load(mock.scenario.read_text())["tools"][0]["inputSchema"]
    arguments = {"item": ["AB-1234", 3], "gift": True, "message": "happy birthday", "channel": "web"}
    async with Client(mock.params) as client:
        listed = (await client.list_tools()).tools[0].input_schema
        assert listed == declared  # every 2020-12 keyword came through unchanged
        validator = jsonschema.Draft202012Validator(listed)
        assert not validator.is_valid({**arguments, "extra": 1})  # unevaluatedProperties
        assert not validator.is_valid({k: v for k, v in arguments.items() if k != "message"})  # dependentRequired
        assert not validator.is_valid({**arguments, "item": ["AB-1234", 3, 4]})  # prefixItems + items: false
        validator.validate(arguments)
        assert text_of(await client.call_tool("create_order", arguments)) == "ordered 3 x AB-1234"
        # the mock validates too: a 2020-12 violation is a tool error, not an order
        refused = await client.call_tool("create_order", {**arguments, "item": ["AB-1234", 3, 4]})
        assert refused.is_error and "no items past the prefix" in text_of(refused)
        # the suite's echo round trip: the schema the client holds, passed back verbatim
        echoed = await client.call_tool("json_schema_echo", {"schema": listed})
        assert json.loads(text_of(echoed).removeprefix("echoed ")) == declared
    report = mock.report()
    assert [v["expectation"] for v in report["expectations"] if v["verdict"] != "passed"] == []
    assert [f["check"] for f in report["findings"]] == ["tools.arguments.invalid"]  # the refused call, on purpose
    mock.check_outbound(schema)


async def test_no_network_dereference_of_ref(tmp_path, schema, monkeypatch):
    """The mock cannot see the network: the test watches every DNS lookup of the in-process client."""
    lookups: list[Any] = []
    real = socket.getaddrinfo

    def watched(host: Any, *args: Any, **kwargs: Any) -> Any:
        lookups.append(host)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", watched)
    mock = Mock(tmp_path, "conformance-ref-no-dereference")
    async with Client(mock.params) as client:
        listed = (await client.list_tools()).tools[0].input_schema
        assert listed["properties"]["city"] == {"$ref": "https://schemas.example.com/city.json"}
        assert text_of(await client.call_tool("lookup", {"city": "Lyon"})) == "found Lyon"
    assert "schemas.example.com" not in lookups
    assert_clean(mock.report())
    mock.check_outbound(schema)


# ------------------------------------------------------------------ stdio-only requirements


async def test_discover_probe_before_initialize(tmp_path):
    mock = Mock(tmp_path, "stdio-discover-probe")
    async with Client(mock.params) as client:
        assert client.protocol_version == "2025-11-25"
        assert text_of(await client.call_tool("echo", {"text": "old"})) == "old"
    assert_clean(mock.report())
    methods = [m.get("method") for m in mock.inbound() if "id" in m]
    assert methods[:2] == ["server/discover", "initialize"]
    # a legacy server's lines are 2025-11-25 messages: not checked against the 2026-07-28 schema
    first = next(r["message"] for r in mock.records() if r["dir"] == "out")
    assert first["error"]["code"] == -32601


async def test_cancelled_on_timeout(tmp_path, schema):
    mock = Mock(tmp_path, "stdio-cancel-on-timeout")
    async with Client(mock.params) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("stuck", read_timeout_seconds=0.5)
        assert info.value.code == types.REQUEST_TIMEOUT
        assert text_of(await client.call_tool("ping_me")) == "pong"
    report = mock.report()
    assert_clean(report)
    assert report["counts"]["cancelled"] == 1
    stuck = next(m for m in mock.inbound() if m.get("params", {}).get("name") == "stuck")
    cancel = next(m for m in mock.inbound() if m.get("method") == "notifications/cancelled")
    assert cancel["params"]["requestId"] == stuck["id"]
    mock.check_outbound(schema)


async def test_nothing_sent_after_a_cancel(tmp_path, schema):
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    mock = Mock(tmp_path, "stdio-silent-after-cancel")
    async with Client(mock.params) as client:
        with pytest.raises(MCPError):
            await client.call_tool("countdown", read_timeout_seconds=0.6, progress_callback=on_progress)
        await trio.sleep(0.5)  # ten more progress notifications would be due by now
        assert text_of(await client.call_tool("ping_me")) == "pong"
    assert progress  # it was running when cancelled
    report = mock.report()
    assert_clean(report)
    records = mock.records()
    at = next(i for i, r in enumerate(records)
              if r["dir"] == "in" and r.get("message", {}).get("method") == "notifications/cancelled")
    cancelled = records[at]["message"]["params"]["requestId"]
    token = next(m for m in mock.inbound() if m.get("id") == cancelled)["params"]["_meta"]["progressToken"]
    after = [r["message"] for r in records[at + 1:] if r["dir"] == "out"]
    assert after  # ping_me was answered
    assert not [m for m in after if m.get("id") == cancelled]
    assert not [m for m in after if m.get("params", {}).get("progressToken") == token]
    mock.check_outbound(schema)


def test_nothing_on_stdout_after_a_cancel_raw(tmp_path, schema):
    """The mock side, on the real pipe: once a cancel is processed, not one more line for that request."""
    sys.path.insert(0, str(BUGGY))
    try:
        from _wire import call, req
    finally:
        sys.path.remove(str(BUGGY))
    mock = Mock(tmp_path, "stdio-silent-after-cancel")
    proc = subprocess.Popen(mock.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    lines: list[dict[str, Any]] = []

    def until(pred: Any) -> dict[str, Any]:
        while True:
            raw = proc.stdout.readline()
            assert raw, "the mock closed stdout early"
            lines.append(schema.check_line(raw))
            if pred(lines[-1]):
                return lines[-1]

    try:
        countdown = call(1, "countdown")
        countdown["params"]["_meta"]["progressToken"] = "t1"
        send(countdown)
        until(lambda m: m.get("method") == "notifications/progress")
        send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        send(call(2, "ping_me"))  # read after the cancel: its answer marks "the cancel was processed"
        until(lambda m: m.get("id") == 2)
        marker = len(lines)
        time.sleep(0.5)  # ten progress notifications would be due by now
        proc.stdin.close()
        for raw in proc.stdout:
            lines.append(schema.check_line(raw))
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    after = lines[marker:]
    assert not [m for m in after if m.get("id") == 1 or m.get("params", {}).get("progressToken") == "t1"], after
    assert not [m for m in lines if m.get("id") == 1]  # never answered at all
    assert mock.report()["counts"]["cancelled"] == 1


async def test_restart_a_server_that_died(tmp_path, schema):
    """mcp 2.3.0 does not respawn by itself: the application opens a new Client and retries."""
    mock = Mock(tmp_path, "stdio-restart")
    async with Client(mock.params) as client:
        assert text_of(await client.call_tool("work", {"job": "first"})) == "did first"
        with pytest.raises(MCPError) as info:
            await client.call_tool("work", {"job": "second"}, read_timeout_seconds=20)
        assert info.value.code == -32000  # Connection closed: the server died with the call in flight
    async with Client(mock.params) as client:  # the restart; the lost call is retried there
        assert text_of(await client.call_tool("work", {"job": "second"})) == "did second"
    pids = mock.pids()
    assert len(pids) == 2
    assert not (mock.dir / f"report-{pids[0]}.json").exists()  # the crashed process writes no report
    exits = [r for r in mock.records() if r["dir"] == "event" and r.get("kind") == "exit" and r["pid"] == pids[0]]
    assert exits and exits[0].get("status") == 9
    assert_clean(mock.report(pids[1]))
    retried = [m["params"]["arguments"] for m in mock.inbound(pids[1]) if m.get("method") == "tools/call"]
    assert retried == [{"job": "second"}]  # the call that was lost, served by the new process
    mock.check_outbound(schema)


async def test_retry_with_an_advertised_version_not_initialize(tmp_path, schema):
    mock = Mock(tmp_path, "stdio-version-retry")
    async with Client(mock.params) as client:
        assert client.protocol_version == "2026-07-28"
        assert text_of(await client.call_tool("echo", {"text": "again"})) == "again"
    report = mock.report()
    assert_clean(report)
    assert "initialize" not in [m.get("method") for m in mock.inbound()]
    out = mock.check_outbound(schema)
    assert out[0]["error"]["code"] == -32022 and out[0]["error"]["data"]["supported"] == ["2026-07-28"]


async def test_listen_again_after_a_restart(tmp_path, schema):
    """mcp 2.3.0 neither respawns nor re-listens by itself: the application does both."""
    mock = Mock(tmp_path, "stdio-listen-after-restart")
    codes: list[int] = []
    try:
        async with Client(mock.params) as client:
            async with client.listen(resource_subscriptions=["feed://news"]) as sub:
                with trio.fail_after(10):
                    await sub.__anext__()
                await client.call_tool("crash", read_timeout_seconds=20)
    except* MCPError as group:  # the call and the listen stream both see the connection close
        codes = [exc.code for exc in _leaves(group)]
    assert codes and set(codes) == {-32000}
    async with Client(mock.params) as client:  # the restart, and the listen again
        async with client.listen(resource_subscriptions=["feed://news"]) as sub:
            with trio.fail_after(10):
                event = await sub.__anext__()
    assert event.uri == "feed://news"
    pids = mock.pids()
    assert len(pids) == 2
    assert_clean(mock.report(pids[1]))
    listens = [(r["pid"], r["message"]["params"]["notifications"]) for r in mock.records()
               if r["dir"] == "in" and r.get("message", {}).get("method") == "subscriptions/listen"]
    assert listens == [(pids[0], {"resourceSubscriptions": ["feed://news"]}),
                       (pids[1], {"resourceSubscriptions": ["feed://news"]})]
    mock.check_outbound(schema)


def _leaves(group: BaseException) -> list[Any]:
    if isinstance(group, BaseExceptionGroup):
        return [leaf for exc in group.exceptions for leaf in _leaves(exc)]
    return [group]


# ------------------------------------------------------------------ deliberately wrong clients


def run_raw(mock: Mock, script: str, schema: Any) -> dict[str, Any]:
    """Run a raw JSON-lines client against the mock; every line it got is schema-checked except deliberate raw writes."""
    proc = subprocess.run([sys.executable, str(BUGGY / script), *mock.argv], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    faults = [json.loads(r["raw"]) for r in mock.records() if r["dir"] == "out" and r.get("fault")]
    for line in proc.stdout.decode().splitlines():
        seen = json.loads(line)
        if seen["message"] not in faults:
            schema.check(seen["message"], seen["method"])
    return mock.report()


@pytest.mark.parametrize(
    ("scenario", "script", "failed", "check"),
    [
        ("conformance-request-state", "conformance_dropped_state.py", {"retry"}, "mrtr.requestState.dropped"),
        ("conformance-no-leak", "conformance_leak.py", {"expectations[1]", "expectations[2]"}, "mrtr.leak"),
        ("conformance-tool-arguments", "conformance_wrong_arguments.py", {"book", "expectations[1]"}, "tools.arguments.invalid"),  # passengers as a string breaks the inputSchema
        ("stdio-version-retry", "conformance_falls_back.py", {"first", "call", "expectations[3]"}, "removed.initialize"),
        ("stdio-cancel-on-timeout", "conformance_no_cancel.py", {"cancel"}, None),
    ],
)
def test_a_wrong_client_fails_the_scenario(tmp_path, schema, scenario, script, failed, check):
    mock = Mock(tmp_path, scenario)
    report = run_raw(mock, script, schema)
    assert report["ok"] is False
    assert {v["expectation"] for v in report["expectations"] if v["verdict"] == "failed"} == failed
    if check is not None:
        assert check in errors(report)


@pytest.mark.parametrize(
    ("scenario", "script"),
    [
        ("conformance-missing-result-type", "reference_missing_result_type.py"),
        ("conformance-version-retry", "reference_version_retry.py"),
    ],
)
def test_a_correct_client_passes_where_the_python_sdk_fails(tmp_path, schema, scenario, script):
    """The two failing Python cells are client behaviour: a client that does what the spec says passes."""
    mock = Mock(tmp_path, scenario)
    assert_clean(run_raw(mock, script, schema))


# ------------------------------------------------------------------ the cookbook


def test_cookbook_has_a_recipe_per_bundled_scenario():
    """docs/cookbook.md: one recipe per bundled scenario, and every conformance/stdio scenario in the verdict table."""
    import re

    from mockmcp.scenario import loader

    text = (ROOT / "docs" / "cookbook.md").read_text(encoding="utf-8")
    recipes = re.findall(r"^- Scenario: `([\w-]+)`", text, flags=re.M)
    assert len(recipes) == len(set(recipes)), "a scenario with two recipes"
    assert sorted(recipes) == sorted(loader.bundled_names())
    table = set(re.findall(r"^\| `([\w-]+)` \|", text, flags=re.M))
    assert table == {n for n in loader.bundled_names() if n.startswith(("conformance-", "stdio-"))}
    for name in table:  # each scenario says what the Python client does, as the table does
        assert "mcp==2.3.0" in (SCENARIOS / f"{name}.yaml").read_text(encoding="utf-8"), name
