"""Legacy-era server-to-client requests (``request`` steps) over Streamable HTTP, in the real process.

A 2025-11-25 client over HTTP gets the server's request on the SSE stream of the POST it
belongs to, and POSTs its JSON-RPC response back on a connection of its own (``202``): the
mock routes it by id to the plan that waits, which goes on with the answer, as on stdio. An
unanswered request times out and is cancelled on the same stream; a late answer is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from support.paths import SCENARIOS
from support.httpmock import HttpMock, read_events, sse_data

CAPS = {"sampling": {}, "roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}
LEGACY = {"MCP-Protocol-Version": "2025-11-25"}


def _post(mock: HttpMock, message: dict[str, Any]) -> Any:
    return mock.post(json.dumps(message).encode(), LEGACY)


def _stream(mock: HttpMock, rid: int, tool: str, **arguments: Any) -> tuple[Any, Iterator[dict[str, Any]]]:
    conn = mock.connection()
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).encode()
    conn.request("POST", "/mcp", body, {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **LEGACY})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"

    def events() -> Iterator[dict[str, Any]]:
        for block in read_events(resp, 100):
            for data in sse_data(block + b"\n\n"):
                yield json.loads(data)

    return conn, events()


def _text(response: dict[str, Any]) -> str:
    return str(response["result"]["content"][0]["text"])


def test_server_requests_are_answered_by_posts(tmp_path: Path) -> None:
    scenario = tmp_path / "legacy.yaml"
    scenario.write_text((SCENARIOS / "everything-legacy.yaml").read_text().replace(
        "request: {method: roots/list, timeout: 5s}", "request: {method: roots/list, timeout: 300ms}"))
    report = tmp_path / "report.json"
    with HttpMock(scenario, "--report", str(report), "--sse-keepalive", "0") as mock:
        init = _post(mock, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": CAPS, "clientInfo": {"name": "legacy-http", "version": "1"}}})
        assert init.status == 200 and init.json()["result"]["protocolVersion"] == "2025-11-25"
        assert _post(mock, {"jsonrpc": "2.0", "method": "notifications/initialized"}).status == 202

        # sampling: the request on the call's stream, the answer POSTed, the result on the stream
        conn, events = _stream(mock, 1, "trigger-sampling-request", prompt="hi")
        req = next(events)
        assert req["method"] == "sampling/createMessage" and req["id"] == "mockmcp-1"
        answer = {"jsonrpc": "2.0", "id": req["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}}
        accepted = _post(mock, answer)
        assert accepted.status == 202 and accepted.body == b""
        done = next(events)
        assert done["id"] == 1 and _text(done).startswith("LLM sampling result: ") and '"text":"42"' in _text(done)
        conn.close()

        # an error answer is an answer too
        conn, events = _stream(mock, 2, "trigger-elicitation-request")
        req = next(events)
        assert req["method"] == "elicitation/create"
        assert _post(mock, {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "user closed the dialog"}}).status == 202
        assert "user closed the dialog" in _text(next(events))
        conn.close()

        # no answer: cancelled on the stream after the timeout, then the scripted fallback
        conn, events = _stream(mock, 3, "get-roots-list")
        req = next(events)
        assert req["method"] == "roots/list"
        cancel, done = next(events), next(events)
        assert cancel == {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": req["id"], "reason": "timed out"}}
        assert _text(done) == "Current MCP Roots: none (the client did not answer)"
        conn.close()
        # a late answer is accepted and ignored; the server goes on
        assert _post(mock, {"jsonrpc": "2.0", "id": req["id"], "result": {"roots": []}}).status == 202
        assert _post(mock, {"jsonrpc": "2.0", "id": 4, "method": "ping"}).json() == {"jsonrpc": "2.0", "id": 4, "result": {}}

        # the answer of one stream's request cannot be taken by another: routed by id
        conn_a, events_a = _stream(mock, 5, "get-roots-list")
        conn_b, events_b = _stream(mock, 6, "trigger-sampling-request", prompt="b")
        req_a, req_b = next(events_a), next(events_b)
        assert req_a["id"] != req_b["id"]
        _post(mock, {"jsonrpc": "2.0", "id": req_b["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "B"}, "model": "m"}})
        _post(mock, {"jsonrpc": "2.0", "id": req_a["id"], "result": {"roots": [{"uri": "file:///a", "name": "a"}]}})
        assert '"text":"B"' in _text(next(events_b))
        assert _text(next(events_a)) == 'Current MCP Roots: [{"uri":"file:///a","name":"a"}]'
        conn_a.close()
        conn_b.close()
        assert mock.stop() == 0
    # the answers are what a legacy client should send: no finding
    assert json.loads(report.read_text())["findings"] == []
