"""The official TypeScript client (@modelcontextprotocol/client 2.4.0, Node 20) against ``mockmcp run default``.

The client connects with ``versionNegotiation: {mode: 'auto'}``, so on stdio it
spawns the mock twice: a probe process that only gets ``server/discover``, then
the session process. The test drives it through tests/interop/ts/driver.mjs,
checks what the client got, and checks from the mock's journal that both
processes saw what NOTES.md describes and that every line the mock wrote is
valid for the revision. The ``typescript_client`` fixture (tests/conftest.py) installs
the client from the committed lockfile; a machine without Node >= 20 and npm fails
here with one line naming them; it does not skip.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from interop.matrix import TS_DIR, run_client, session_report
from mockmcp.scenario import loader
from mockmcp.verify.journal import read_journal
from support.process import mockmcp_prefix

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("typescript_client")]


def test_typescript_client_is_installed() -> None:
    installed = json.loads((TS_DIR / "node_modules" / "@modelcontextprotocol" / "client" / "package.json").read_text())
    assert installed["version"] == "2.4.0"
    pkg = json.loads((TS_DIR / "package.json").read_text())
    assert pkg["dependencies"]["@modelcontextprotocol/client"] == "2.4.0"
    lock = json.loads((TS_DIR / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@modelcontextprotocol/client"]["version"] == "2.4.0"


PLAN_OPS: list[dict[str, Any]] = [
    {"op": "listTools"},
    {"op": "callTool", "name": "echo", "arguments": {"text": "hello from node"}},
    {"op": "callTool", "name": "add", "arguments": {"a": 2, "b": 3.5}},
    {"op": "callTool", "name": "add", "arguments": {"a": "two"}},
    {"op": "callTool", "name": "get_weather", "arguments": {"city": "Paris"}},
    {"op": "callTool", "name": "get_weather", "arguments": {"city": "Atlantis"}},
    {"op": "listPrompts"},
    {"op": "getPrompt", "name": "code_review", "arguments": {"code": "x = 1", "language": "python"}},
    {"op": "listResources"},
    {"op": "readResource", "uri": "file:///project/README.md"},
    {"op": "readResource", "uri": "file:///project/logo.png"},
    {"op": "listResourceTemplates"},
    {"op": "readResource", "uri": "weather://forecast/Oslo"},
    {"op": "readResource", "uri": "file:///nowhere"},
    {"op": "complete", "ref": {"type": "ref/prompt", "name": "code_review"},
     "argument": {"name": "language", "value": "ty"}},
]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, typescript_client: None) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("ts")
    command = [*mockmcp_prefix(), "run", "default",
               "--journal", str(work / "journal.jsonl"), "--report", str(work / "report-{pid}.json")]
    result = run_client("typescript", {"command": command, "timeoutMs": 10_000, "ops": PLAN_OPS})
    assert "crash" not in result, result
    return {"result": result, "work": work, "ops": result["ops"]}


def _op(session: dict[str, Any], i: int) -> dict[str, Any]:
    op = session["ops"][i]
    assert op["op"] == PLAN_OPS[i]["op"]
    return op


def test_connects_in_the_modern_era(session: dict[str, Any]) -> None:
    conn = session["result"]["connect"]
    assert conn["status"] == "ok", conn
    assert conn["era"] == "modern"
    assert conn["protocolVersion"] == "2026-07-28"
    assert len(session["ops"]) == len(PLAN_OPS)
    assert "shutdown" not in session["result"]


def test_tools(session: dict[str, Any]) -> None:
    listed = _op(session, 0)
    assert listed["status"] == "ok"
    assert listed["result"]["tools"] == ["echo", "add", "get_weather"]
    add_tool = listed["result"]["items"][1]
    assert add_tool["outputSchema"]["required"] == ["sum"]

    echo = _op(session, 1)
    assert echo["status"] == "ok", echo
    assert echo["result"]["content"] == [{"type": "text", "text": "hello from node"}]
    assert echo["result"].get("isError", False) is False

    add = _op(session, 2)
    assert add["status"] == "ok", add
    assert add["result"]["structuredContent"] == {"sum": 5.5}
    assert add["result"]["content"][0]["text"] == "5.5"

    bad_add = _op(session, 3)
    assert bad_add["status"] == "ok", bad_add  # a tool error is a result, not a protocol error
    assert bad_add["result"]["isError"] is True
    # the mock validates the arguments against add's inputSchema (a tool error, as tools.mdx says)
    assert bad_add["result"]["content"][0]["text"].startswith("Invalid arguments for tool add: ")

    weather = _op(session, 4)
    assert weather["status"] == "ok", weather
    assert weather["result"]["content"][0]["text"] == "Sunny, 22°C in Paris"

    atlantis = _op(session, 5)
    assert atlantis["status"] == "error", atlantis
    assert atlantis["code"] == -32602
    assert atlantis["data"] == {"city": "Atlantis"}


def test_prompt(session: dict[str, Any]) -> None:
    assert _op(session, 6)["result"]["prompts"] == ["code_review"]
    got = _op(session, 7)
    assert got["status"] == "ok", got
    (message,) = got["result"]["messages"]
    assert message["role"] == "user"
    assert message["content"] == {"type": "text", "text": "Please review this python:\nx = 1"}


def test_resources(session: dict[str, Any]) -> None:
    scenario, _ = loader.load("default", use_cache=False)
    logo = next(r for r in scenario.resources if r.uri.endswith("logo.png"))

    assert _op(session, 8)["result"]["resources"] == ["file:///project/README.md", "file:///project/logo.png"]
    readme = _op(session, 9)
    assert readme["status"] == "ok", readme
    (contents,) = readme["result"]["contents"]
    assert contents["text"].startswith("# Demo project")
    assert contents["mimeType"] == "text/markdown"

    png = _op(session, 10)
    assert png["status"] == "ok", png
    (contents,) = png["result"]["contents"]
    assert contents["blob"] == logo.blob
    assert base64.b64decode(contents["blob"]).startswith(b"\x89PNG")

    assert _op(session, 11)["result"]["resourceTemplates"] == ["weather://forecast/{city}"]
    forecast = _op(session, 12)
    assert forecast["status"] == "ok", forecast
    assert json.loads(forecast["result"]["contents"][0]["text"]) == {"city": "Oslo", "forecast": "sunny"}

    missing = _op(session, 13)
    assert missing["status"] == "error", missing
    assert missing["code"] == -32602  # resource not found, revision 2026-07-28


def test_completion(session: dict[str, Any]) -> None:
    done = _op(session, 14)
    assert done["status"] == "ok", done
    assert done["result"]["completion"]["values"] == ["typescript"]


def test_two_processes_probe_then_session(session: dict[str, Any], schema: Any) -> None:
    records = read_journal(session["work"] / "journal.jsonl")
    by_pid: dict[int, list[dict[str, Any]]] = {}
    for rec in records:
        by_pid.setdefault(rec["pid"], []).append(rec)
    assert len(by_pid) == 2, f"expected a probe and a session process, got pids {list(by_pid)}"
    probe, main = sorted(by_pid.values(), key=lambda recs: recs[0]["t"])

    probe_in = [r["message"] for r in probe if r["dir"] == "in" and "message" in r]
    assert [(m["method"], m["id"]) for m in probe_in] == [("server/discover", "server-discover-probe-1")]

    main_in = [r["message"] for r in main if r["dir"] == "in" and "message" in r]
    requests = [m for m in main_in if "id" in m and "method" in m]
    assert requests[0]["id"] == 0  # the session's ids start at 0: id 0 is a request like any other
    methods = [m["method"] for m in requests]
    for needed in ("tools/list", "tools/call", "prompts/get", "resources/read", "completion/complete"):
        assert needed in methods
    assert "initialize" not in methods
    for m in requests:
        meta = m["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert "io.modelcontextprotocol/clientCapabilities" in meta

    for recs in (probe, main):
        asked = {json.dumps(r["message"]["id"]): r["message"]["method"]
                 for r in recs if r["dir"] == "in" and "method" in r.get("message", {}) and "id" in r["message"]}
        outs = [r["message"] for r in recs if r["dir"] == "out" and "message" in r]
        assert outs
        for msg in outs:
            schema.check(msg, asked.get(json.dumps(msg.get("id"))))


def test_the_mock_finds_only_the_deliberate_unmatched_read(session: dict[str, Any]) -> None:
    report = session_report(session["work"])
    assert report is not None
    errors = [f for f in report["findings"] if f["level"] == "error"]
    # the plan's deliberate mistakes: add with arguments that break its schema, and reading
    # file:///nowhere; nothing else the client sent is wrong
    assert [f["check"] for f in errors] == ["tools.arguments.invalid", "expect.unmatched"], errors
    assert "file:///nowhere" in errors[1]["text"]
    assert report["counts"]["requests"] >= len(PLAN_OPS)
