"""``mockmcp record`` against two more real servers nobody here wrote, in the era each speaks.

- fastmcp's server (``fastmcp==4.1.6``, a test extra; tests/servers/fastmcp_server.py): modern era.
- the reference "everything" server (``@modelcontextprotocol/server-everything`` from npm,
  installed by the test setup from tests/servers/everything/package-lock.json like the
  TypeScript client): it speaks the legacy (2025-11-25) era, so the Python client falls
  back to ``initialize`` and the cassette is a legacy-era scenario.

For each: a session driven by the official Python client is recorded; replaying the
cassette to the Python and TypeScript clients gives the results the real server gave
them; an unrecorded call fails with a near miss naming the recorded one; and
``new_episodes`` passes that call to the real server and appends it, so that a replay
answers it afterwards. The everything server asks the client for roots, a sampling and an
elicitation in the middle of calls: the replay sends each request, waits for the client's
answer before the call goes on, and reports an answer that differs from the recorded one.
"""

from __future__ import annotations

import json
import select
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from support.legacyclient import Legacy

from interop import tsclient
from interop.matrix import run_batch, run_client
from mockmcp.scenario import loader
from support import zygote
from support.process import mockmcp_prefix

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("zygote")]

HERE = Path(__file__).parents[1]  # tests/
EVERYTHING_DIR = HERE / "servers" / "everything"
EVERYTHING_JS = EVERYTHING_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

SERVERS: dict[str, dict[str, Any]] = {
    "fastmcp": {
        "command": zygote.command("fastmcp_server.py"),  # (through support.zygote)
        "era": "modern",
        "ops": [
            {"op": "listTools"},
            {"op": "callTool", "name": "shout", "arguments": {"text": "hi"}},
            {"op": "callTool", "name": "multiply", "arguments": {"a": 6, "b": 7}},
            {"op": "callTool", "name": "steps", "arguments": {"n": 3}},
            {"op": "callTool", "name": "broken", "arguments": {}},
            {"op": "listPrompts"},
            {"op": "getPrompt", "name": "summarize", "arguments": {"text": "a long text"}},
            {"op": "listResources"},
            {"op": "listResourceTemplates"},
            {"op": "readResource", "uri": "fastmcp://about"},
            {"op": "readResource", "uri": "fastmcp://users/42"},
        ],
        "unrecorded": {"op": "callTool", "name": "shout", "arguments": {"text": "bye"}},
        "unrecorded_text": "BYE",
    },
    "everything": {
        "command": ["node", str(EVERYTHING_JS), "stdio"],
        "era": "legacy",
        "ops": [
            # First: the server also fetches roots by itself 350 ms after initialize (outside any
            # call, which a cassette cannot replay) and then answers this tool from its cache; called
            # at once, the call is what asks the client for roots/list, and the recording has it.
            {"op": "callTool", "name": "get-roots-list", "arguments": {}},
            {"op": "listTools"},
            {"op": "callTool", "name": "echo", "arguments": {"message": "hi"}},
            {"op": "callTool", "name": "get-sum", "arguments": {"a": 1, "b": 2}},
            {"op": "callTool", "name": "trigger-long-running-operation", "arguments": {"duration": 0.3, "steps": 3}},
            {"op": "listPrompts"},
            {"op": "getPrompt", "name": "args-prompt", "arguments": {"city": "Oslo"}},
            {"op": "listResources"},
            {"op": "listResourceTemplates"},
            # (its dynamic resources carry the time they were read: a replay cannot agree with a new read)
            {"op": "readResource", "uri": "demo://resource/static/document/architecture.md"},
        ],
        # Python only: the server's text embeds the client's sampling answer in the key order the
        # client wrote it (each SDK has its own), and each driver invents its own elicitation answer.
        "python_ops": [
            {"op": "callTool", "name": "trigger-sampling-request", "arguments": {"prompt": "hello", "maxTokens": 5}},
            {"op": "callTool", "name": "trigger-elicitation-request", "arguments": {}},
        ],
        "unrecorded": {"op": "callTool", "name": "echo", "arguments": {"message": "bye"}},
        "unrecorded_text": "Echo: bye",
    },
}
# Definition fields the scenario format has no place for (the tasks extension's `execution`):
# a cassette drops them, so lists are compared without them.
UNMODELLED = ("execution",)


def record_cmd(cassette: Path, mode: str, server: dict[str, Any]) -> list[str]:
    return [*mockmcp_prefix(), "record", "-o", str(cassette), "--mode", mode, "--", *server["command"]]


def normalized(result: dict[str, Any], *, progress: bool = True) -> list[tuple[Any, ...]]:
    assert "crash" not in result, result
    assert result["connect"]["status"] == "ok", result
    out = []
    for op in result["ops"]:
        value = op.get("result")
        if isinstance(value, dict) and "items" in value:
            value = dict(value, items=[_definition(i) for i in value["items"]])
        out.append((op["op"], op.get("name", op.get("uri")), op["status"], value, op.get("code"),
                    op.get("progress") if progress else None))
    return out


def _definition(item: dict[str, Any]) -> dict[str, Any]:
    item = {k: v for k, v in item.items() if k not in UNMODELLED}
    if isinstance(item.get("arguments"), list):  # `required: false` is the default, written or not
        item["arguments"] = [{k: v for k, v in a.items() if (k, v) != ("required", False)} for a in item["arguments"]]
    return item


@pytest.fixture(scope="module", params=list(SERVERS))
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    name = request.param
    server = SERVERS[name]
    if name == "everything":
        # npm ci from the committed lockfile, once per lockfile (fails, never skips, without Node)
        tsclient.ensure(EVERYTHING_DIR, "@modelcontextprotocol/server-everything")
    work = tmp_path_factory.mktemp(f"record-{name}")
    cassette = work / "cassette.yaml"
    ops = [*server["ops"], *server.get("python_ops", ())]
    (recorded,) = run_batch("python-asyncio", [
        {"command": record_cmd(cassette, "once", server), "ops": ops, "timeoutMs": 20000}], jobs=1)
    # The Python client's other two sessions in one driver: a replay of the cassette that ends with
    # a call it lacks, and new_episodes on a copy of it that passes that call to the real server.
    appended = work / "appended.yaml"
    shutil.copy(cassette, appended)
    new = server["unrecorded"]
    recorded_one = next(o for o in server["ops"] if o["op"] == "callTool" and o["name"] == new["name"])
    replay = [*mockmcp_prefix(), "run", str(cassette)]
    python_replay, episode = run_batch("python-asyncio", [
        {"command": replay, "ops": [*ops, new]},
        {"command": record_cmd(appended, "new_episodes", server), "ops": [recorded_one, new], "timeoutMs": 20000},
    ], jobs=2)
    return {"name": name, "server": server, "cassette": cassette, "recorded": recorded, "work": work,
            "python_replay": python_replay, "appended": appended, "recorded_one": recorded_one, "episode": episode}


def test_the_cassette_is_a_scenario_of_the_servers_era(session: dict[str, Any]) -> None:
    scenario, _ = loader.load(str(session["cassette"]), use_cache=False)
    assert scenario.protocol.era == session["server"]["era"]
    assert all(op["status"] == "ok" for op in session["recorded"]["ops"]), session["recorded"]


def test_replay_gives_both_clients_what_the_real_server_gave_them(session: dict[str, Any]) -> None:
    server, cassette = session["server"], session["cassette"]
    replay = [*mockmcp_prefix(), "run", str(cassette)]
    # the Python replay (run by the fixture) ends with a call that was not recorded: it must fail
    # with a near miss. The TS sessions one after the other: the TS client's discover probe has a
    # timeout of its own that a loaded machine can exceed (it then falls back to legacy).
    real = run_client("typescript", {"command": server["command"], "ops": server["ops"],
                                     "timeoutMs": 20000, "connectTimeoutMs": 20000})
    ts_replay = run_client("typescript", {"command": replay, "ops": server["ops"]})
    python_replay = session["python_replay"]
    *replayed, missed = normalized(python_replay)
    assert replayed == normalized(session["recorded"])
    # progress counts aside: the TS client drops progress for token 0 at random (see test_record_sdk)
    assert normalized(ts_replay, progress=False) == normalized(real, progress=False)
    assert ts_replay["connect"]["era"] == real["connect"]["era"] == session["server"]["era"]
    op = python_replay["ops"][-1]
    assert op["status"] == "error", op
    reason = op["data"]["nearMiss"]["reason"]
    assert "bye" in reason and "hi" in reason, op  # what was asked, and the closest recorded call


def test_new_episodes_appends_an_unrecorded_call(session: dict[str, Any]) -> None:
    server, episode, recorded_one = session["server"], session["episode"], session["recorded_one"]
    before = session["cassette"].read_text()  # (the fixture ran new_episodes on a copy of it)
    new = server["unrecorded"]
    assert [o["status"] for o in episode["ops"]] == ["ok", "ok"], episode
    assert server["unrecorded_text"] in json.dumps(episode["ops"][1]["result"])
    after = session["appended"].read_text()
    assert after.startswith(before.split("\ntools:")[0])  # what was there is kept as written
    scenario, _ = loader.load(str(session["appended"]), use_cache=False)
    tool = next(t for t in scenario.tools if t.name == new["name"])
    assert [r.when.arguments for r in tool.replies] == [recorded_one["arguments"], new["arguments"]]


def _asking_rule(scenario: Any, method: str) -> tuple[str, Any]:
    """The tool and rule whose steps ask the client ``method`` (where the recording put it)."""
    for tool in scenario.tools:
        for rule in tool.replies:
            if any(type(s).__name__ == "RequestStep" and s.request.method == method for s in rule.steps or ()):
                return tool.name, rule
    raise AssertionError(f"no recorded rule asks {method}")


@pytest.mark.parametrize("session", ["everything"], indirect=True)  # the one that asks the client
def test_legacy_server_requests_replay_as_requests_that_wait_for_the_clients_answer(
        session: dict[str, Any], tmp_path: Path) -> None:
    scenario, _ = loader.load(str(session["cassette"]), use_cache=False)
    asks = {}
    for method in ("roots/list", "sampling/createMessage", "elicitation/create"):
        name, rule = _asking_rule(scenario, method)
        (step,) = [s for s in rule.steps if type(s).__name__ == "RequestStep"]
        asks[method] = (name, rule, step)
        assert step.request.expect is not None and "result" in step.request.expect, step
    assert asks["roots/list"][2].request.expect == {"result": {"roots": [{"uri": "file:///project", "name": "project"}]}}
    # Driven by hand: the replay sends the recorded roots/list, then nothing more until answered.
    name, rule, _ = asks["roots/list"]
    report = tmp_path / "report.json"
    client = Legacy(session["cassette"], "--report", str(report), "--strict")
    client.tool(1, name, **(rule.when.arguments or {}))
    asked = client.read()
    assert asked["method"] == "roots/list" and asked["id"] == "mockmcp-1", asked
    assert select.select([client.proc.stdout], [], [], 0.5)[0] == [] and not client.buffer  # it waits
    client.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///elsewhere", "name": "project"}]}})
    *_, done = client.until(1)
    recorded = next(s for s in rule.steps if type(s).__name__ == "ResultStep")
    assert done["result"]["content"] == recorded.result["content"]  # the recorded answer, all the same
    client.close()
    assert client.proc.returncode == 1  # --strict: the answer differed from the recorded one
    (finding,) = json.loads(report.read_text())["findings"]
    assert finding["check"] == "expect.answer" and finding["id"] == 1, finding
    reason = finding["nearMiss"]["reason"]
    assert "file:///elsewhere" in reason and "file:///project" in reason and "roots[0].uri" in reason, finding


LEGACY_FAULTS = """\
mockmcp: 1
protocol: {era: dual}
tools:
  - name: echo
    replies:
      - when: {arguments: {message: slow}}
        steps: [{sleep: 300ms}, {forward: pass}]
      - when: {arguments: {message: fail}}
        steps: [{error: {code: -32603, message: injected by the proxy}}]
expectations:
  - {method: tools/call, name: echo, atLeast: 2}
"""


def test_proxy_in_front_of_the_legacy_everything_server(tmp_path: Path) -> None:
    tsclient.ensure(EVERYTHING_DIR, "@modelcontextprotocol/server-everything")
    faults = tmp_path / "faults.yaml"
    faults.write_text(LEGACY_FAULTS)
    report = tmp_path / "report.json"
    cmd = [*mockmcp_prefix(), "proxy", "--faults", str(faults), "--report", str(report), "--strict",
           "--", *SERVERS["everything"]["command"]]
    ops = [{"op": "callTool", "name": "echo", "arguments": {"message": m}} for m in ("hi", "slow", "fail")]
    (result,) = run_batch("python-asyncio", [{"command": cmd, "ops": ops, "timeoutMs": 20000}], 1)
    assert result["connect"] == {**result["connect"], "status": "ok", "protocolVersion": "2025-11-25"}
    hi, slow, fail = result["ops"]
    assert hi["result"]["content"][0]["text"] == "Echo: hi" and slow["result"]["content"][0]["text"] == "Echo: slow"
    assert fail["status"] == "error" and fail["message"] == "injected by the proxy"
    verdict = json.loads(report.read_text())
    assert verdict["ok"] is True, verdict  # the Python client broke no rule of either era; echo was called
