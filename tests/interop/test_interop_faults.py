"""The official Python SDK client (mcp==2.3.0) against the bundled fault scenarios.

Each test spawns ``python -m mockmcp run <scenario>`` through the SDK's stdio
transport (through ``interop_tee.py`` where every line must be seen, so each
line the mock wrote is schema-checked).

What the client does, as observed here: a call to ``hang`` with
``read_timeout_seconds`` raises MCPError -32001 and the client sends
``notifications/cancelled`` (the mock logs it at ``--log-level info``); a
``crash`` raises MCPError -32000 "Connection closed"; against ``legacy`` the
default ``mode="auto"`` falls back to ``initialize`` at once because
``server/discover`` gets -32601 (mcp 2.3.0 falls back on *any* JSON-RPC error
except -32022 naming only modern versions; only silence costs it its 10 s
discover timeout); against ``version-retry`` it re-probes at the version named
in -32022 and goes on.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from support.process import mockmcp_cmd, mockmcp_prefix

TEE = Path(__file__).parents[1] / "support" / "interop_tee.py"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def mock(scenario: str, *args: str) -> StdioServerParameters:
    command, *rest = mockmcp_cmd("run", scenario, *args)
    return StdioServerParameters(command=command, args=rest)


def teed(record: Path, scenario: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[str(TEE), str(record), "--", *mockmcp_prefix(), "run", scenario]
    )


def record_of(record: Path) -> tuple[list[dict[str, Any]], list[bytes]]:
    entries = [json.loads(x) for x in record.read_text().splitlines()]
    inbound = [json.loads(e["line"]) for e in entries if e["dir"] == "in" and e["line"].strip()]
    outbound = [e["line"].encode() for e in entries if e["dir"] == "out"]
    return inbound, outbound


def test_hang_times_out_and_the_client_cancels(tmp_path, schema):
    errlog = tmp_path / "stderr.log"
    journal = tmp_path / "journal.jsonl"

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        with open(errlog, "w") as err:
            async with Client(stdio_client(mock("faults", "--log-level", "info", "--journal", str(journal)), errlog=err)) as client:
                start = time.monotonic()
                with pytest.raises(MCPError) as info:
                    await client.call_tool("hang", {}, read_timeout_seconds=1)
                seen["elapsed"] = time.monotonic() - start
                seen["code"] = info.value.code
                # the connection survives: the next call is served
                seen["after"] = await client.call_tool("garbage", {})
        return seen

    seen = anyio.run(main)
    assert seen["code"] == -32001  # the SDK's REQUEST_TIMEOUT
    assert 0.9 <= seen["elapsed"] < 15
    assert seen["after"].content[0].text == "garbage survived"
    text = errlog.read_text()
    assert "cancelled by the client (timed out after 1s)" in text
    entries = [json.loads(x) for x in journal.read_text().splitlines()]
    hang_id = next(e["message"]["id"] for e in entries if e["dir"] == "in" and e["message"].get("params", {}).get("name") == "hang")
    cancels = [e["message"] for e in entries if e["dir"] == "in" and e["message"].get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [hang_id]
    assert any(e["dir"] == "event" and e.get("kind") == "cancelled" and e.get("id") == hang_id for e in entries)


def test_crash_is_a_connection_error_and_a_fresh_spawn_works():
    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(mock("faults")) as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("crash", {}, read_timeout_seconds=20)
            seen["crash"] = info.value
        async with Client(mock("faults")) as client:  # a new process: state starts over
            outcomes = []
            for _ in range(3):
                try:
                    outcomes.append((await client.call_tool("flaky", {})).content[0].text)
                except MCPError as exc:
                    outcomes.append(exc.code)
            seen["flaky"] = outcomes
        return seen

    seen = anyio.run(main)
    assert seen["crash"].code == -32000 and "closed" in str(seen["crash"]).lower()
    assert seen["flaky"] == [-32603, -32603, "flaky succeeded"]


def test_default_mode_falls_back_to_initialize_against_legacy(tmp_path):
    record = tmp_path / "legacy.jsonl"

    async def main() -> dict[str, Any]:
        start = time.monotonic()
        async with Client(teed(record, "legacy")) as client:
            connected = time.monotonic() - start
            result = await client.call_tool("echo", {"text": "hello legacy"})
            return {"version": client.protocol_version, "text": result.content[0].text, "connected": connected}

    seen = anyio.run(main)
    assert seen["version"] == "2025-11-25"
    assert seen["text"] == "hello legacy"
    assert seen["connected"] < 8  # no 10 s discover timeout: -32601 makes it fall back at once
    inbound, outbound = record_of(record)
    methods = [m.get("method") for m in inbound]
    assert methods[:2] == ["server/discover", "initialize"]
    assert "tools/call" in methods
    first = json.loads(outbound[0])
    assert first["error"]["code"] == -32601
    assert all("resultType" not in json.loads(x).get("result", {}) for x in outbound)


def test_version_retry_flow(tmp_path, schema):
    record = tmp_path / "retry.jsonl"

    async def main() -> dict[str, Any]:
        async with Client(teed(record, "version-retry")) as client:
            result = await client.call_tool("echo", {"text": "again"})
            return {"version": client.protocol_version, "text": result.content[0].text}

    seen = anyio.run(main)
    assert seen == {"version": "2026-07-28", "text": "again"}
    inbound, outbound = record_of(record)
    methods = {m["id"]: m["method"] for m in inbound if "id" in m and "method" in m}
    assert [m["method"] for m in inbound[:2]] == ["server/discover", "server/discover"]
    assert "initialize" not in methods.values()
    first = schema.check_line(outbound[0])
    assert first["error"]["code"] == -32022 and first["error"]["data"]["supported"] == ["2026-07-28"]
    for raw in outbound[1:]:
        msg = schema.check_line(raw)
        schema.check(msg, methods[msg["id"]])
        assert "result" in msg


def _connect_error(params: StdioServerParameters) -> BaseException:
    """What ``async with Client(...)`` raises (the SDK wraps connect failures in ExceptionGroups)."""

    async def main() -> None:
        with anyio.fail_after(30):
            async with Client(params):
                pass

    with pytest.raises(BaseException) as info:
        anyio.run(main)
    exc: BaseException = info.value
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@pytest.mark.parametrize("mode", ["method-not-found", "invalid-params"])
def test_modern_server_refusing_discover_makes_the_client_give_up_after_two_probes(tmp_path, mode):
    # The SDK falls back to initialize, gets -32022 (modern evidence), probes once more,
    # is refused again, tries initialize again and raises that -32022: a clear failure, no hang.
    path = tmp_path / "s.yaml"
    path.write_text(f"mockmcp: 1\nprotocol: {{discover: {mode}}}\ntools: [{{name: echo}}]\n")
    record = tmp_path / "r.jsonl"
    exc = _connect_error(teed(record, str(path)))
    assert isinstance(exc, MCPError) and exc.code == -32022
    inbound, _ = record_of(record)
    assert [m.get("method") for m in inbound] == ["server/discover", "initialize", "server/discover", "initialize"]


def test_discover_exit_is_a_connection_error(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("mockmcp: 1\nprotocol: {discover: exit}\n")
    exc = _connect_error(mock(str(path)))
    assert isinstance(exc, MCPError) and exc.code == -32000


@pytest.mark.parametrize("client_mode,version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_dual_era_serves_modern_and_legacy_clients(tmp_path, client_mode, version):
    path = tmp_path / "dual.yaml"
    path.write_text('mockmcp: 1\nprotocol: {era: dual}\ntools: [{name: echo, replies: [{steps: [{text: "{{ arguments.text }}"}]}]}]\n')

    async def main() -> tuple[str, str]:
        async with Client(mock(str(path)), mode=client_mode) as client:
            result = await client.call_tool("echo", {"text": client_mode})
            return client.protocol_version, result.content[0].text

    assert anyio.run(main) == (version, client_mode)
