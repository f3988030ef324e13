"""Legacy era (2025-11-25), dual era, discover faults and version negotiation, at engine level.

The SDK client's side of these flows is in ``tests/interop/test_interop_faults.py``;
a real process is in ``tests/shells/test_faults_e2e.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import bundled, engine_for
from support.messages import call, request

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}},
}


def legacy_call(rid: Any, name: str, **args: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}


def test_legacy_answers_discover_with_method_not_found_before_and_after_initialize(schema):
    link = FakeLink(bundled("legacy"))
    (out,) = link.send(request(1, "server/discover"))
    schema.check(out)
    assert out["error"]["code"] == -32601
    link.send(INIT)
    (out,) = link.send(request(2, "server/discover"))
    assert out["error"]["code"] == -32601


def test_legacy_handshake_then_a_tool_call_without_result_type():
    link = FakeLink(bundled("legacy"))
    (init,) = link.send(INIT)
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["serverInfo"]["name"] == "legacy"
    assert "tools" in init["result"]["capabilities"]
    assert link.send({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    (tools,) = link.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert [t["name"] for t in tools["result"]["tools"]] == ["echo"]
    assert not {"resultType", "ttlMs", "cacheScope"} & set(tools["result"])
    (out,) = link.send(legacy_call(2, "echo", text="hi"))
    assert out["result"] == {"content": [{"type": "text", "text": "hi"}]}
    (pong,) = link.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert pong["result"] == {}


def test_legacy_rejects_requests_before_initialize():
    link = FakeLink(bundled("legacy"))
    (out,) = link.send(legacy_call(1, "echo", text="hi"))
    assert out["error"]["code"] == -32600


DUAL = """
mockmcp: 1
protocol: {era: dual}
tools: [{name: echo, replies: [{steps: [{text: "{{ arguments.text }}"}]}]}]
"""


def test_dual_era_serves_modern_requests_and_the_handshake(schema):
    link = FakeLink(engine_for(DUAL))
    (disc,) = link.send(request(1, "server/discover"))
    schema.check(disc, "server/discover")
    (modern,) = link.send(call(2, "echo", text="m"))
    schema.check(modern, "tools/call")
    (init,) = link.send(INIT)
    assert init["result"]["protocolVersion"] == "2025-11-25"
    (old,) = link.send(legacy_call(3, "echo", text="l"))
    assert old["result"] == {"content": [{"type": "text", "text": "l"}]}
    (modern,) = link.send(call(4, "echo", text="m2"))
    schema.check(modern, "tools/call")  # _meta still selects the modern answer


@pytest.mark.parametrize("mode,code", [("method-not-found", -32601), ("invalid-params", -32602)])
def test_discover_error_modes(schema, mode, code):
    link = FakeLink(engine_for(f"mockmcp: 1\nprotocol: {{discover: {mode}}}\n"))
    (out,) = link.send(request(1, "server/discover"))
    schema.check(out)
    assert out["error"]["code"] == code


def test_discover_silent_and_exit():
    link = FakeLink(engine_for("mockmcp: 1\nprotocol: {discover: silent}\n"))
    assert link.send(request(1, "server/discover")) == [] and 1 in link.open
    link = FakeLink(engine_for("mockmcp: 1\nprotocol: {discover: exit}\n"))
    assert link.send(request(1, "server/discover")) == [] and link.exits == [1]


def test_modern_server_answers_initialize_with_32022_naming_its_versions(schema):
    link = FakeLink(engine_for("mockmcp: 1\n"))
    (out,) = link.send(INIT)
    schema.check(out)
    assert out["error"]["code"] == -32022
    assert out["error"]["data"]["supported"] == ["2026-07-28"]


def test_version_retry_rejects_only_the_first_request(schema):
    link = FakeLink(bundled("version-retry"))
    (first,) = link.send(request(1, "server/discover"))
    schema.check(first)
    assert first["error"]["code"] == -32022
    assert first["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2026-07-28"}
    (again,) = link.send(request(2, "server/discover"))
    schema.check(again, "server/discover")
    assert again["result"]["supportedVersions"] == ["2026-07-28"]
    (out,) = link.send(call(3, "echo", text="x"))
    schema.check(out, "tools/call")


def test_unsupported_version_lists_the_supported_ones(schema):
    link = FakeLink(engine_for('mockmcp: 1\nprotocol: {versions: ["2026-07-28", "2027-01-01"]}\n'))
    (out,) = link.send(request(1, "server/discover", meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01"}))
    schema.check(out)
    assert out["error"]["data"] == {"supported": ["2026-07-28", "2027-01-01"], "requested": "2099-01-01"}
