"""The Streamable HTTP rules without sockets (mockmcp/httprules.py): each decision on its own."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mockmcp.wire import errors
from mockmcp.core import httprules
from mockmcp.wire import jsonrpc
from mockmcp.core.actions import Emit, Park, Plan, Send, Sleep

V = "2026-07-28"
GOOD_HEAD = {b"accept": b"application/json, text/event-stream", b"content-type": b"application/json"}


def head(method: bytes = b"POST", target: bytes = b"/mcp", **extra: bytes) -> httprules.Reject | None:
    headers = dict(GOOD_HEAD)
    headers.update({k.replace("_", "-").encode(): v for k, v in extra.items()})
    return httprules.check_head(method, target, headers)


def test_head_rules() -> None:
    assert head() is None
    assert head(target=b"/mcp?x=1") is None
    assert _status(head(target=b"/other")) == 404
    rejected = head(method=b"GET")
    assert _status(rejected) == 405 and rejected is not None and (b"allow", b"POST") in rejected.headers
    assert _status(head(method=b"DELETE")) == 405
    assert _status(head(accept=b"application/json")) == 406
    assert _status(head(accept=b"text/event-stream")) == 406
    assert _status(head(accept=b"application/json, text/event-stream;q=0")) == 406
    assert head(accept=b"*/*") is None and head(accept=b"application/*, text/*") is None
    assert head(accept=b"text/event-stream; q=0.5 , Application/JSON") is None
    assert _status(head(content_type=b"text/plain")) == 415
    assert head(content_type=b"application/json; charset=utf-8") is None
    assert head(transfer_encoding=b"chunked") is None and head(content_length=b"2") is None
    assert _status(head(transfer_encoding=b"chunked", content_length=b"3")) == 400  # (two framings: smuggling)
    assert _status(head(method=b"GET", transfer_encoding=b"chunked", content_length=b"3")) == 400  # (before the method)


def test_origin() -> None:
    assert head(origin=b"http://localhost:3000") is None
    assert head(origin=b"http://127.0.0.1") is None and head(origin=b"https://[::1]:8443") is None
    for bad in (b"http://evil.example", b"http://localhost.evil.example", b"null", b"http://127.0.0.1.evil:80"):
        rejected = head(origin=bad)
        assert _status(rejected) == 403, bad
        assert rejected is not None and json.loads(rejected.body)["error"]["code"] == -32600
        assert "id" not in json.loads(rejected.body)  # the spec's "error response that has no id"
    headers = {**GOOD_HEAD, b"origin": b"https://app.example"}
    assert httprules.check_head(b"POST", b"/mcp", headers, allowed_origins=frozenset({"https://app.example"})) is None
    # the origin is checked before the method: a foreign page learns nothing about the endpoint
    assert _status(head(method=b"GET", origin=b"http://evil.example")) == 403


def _status(reject: httprules.Reject | None) -> int | None:
    return None if reject is None else reject.status


def request(method: str, params: dict[str, Any] | None = None, version: str = V, rid: Any = 1) -> jsonrpc.Message:
    params = dict(params or {})
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}
    return jsonrpc.decode(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())


def mismatch(msg: jsonrpc.Message, tool_headers: Any = None, **headers: str | bytes) -> str | None:
    hdrs = {k.replace("_", "-").lower().encode(): (v if isinstance(v, bytes) else v.encode()) for k, v in headers.items()}
    try:
        httprules.check_metadata(msg, hdrs, tool_headers or {})
    except httprules.HeaderMismatch as exc:
        assert exc.code == -32020 and exc.request_id == getattr(msg, "id", None)
        return exc.message
    return None


def test_standard_headers() -> None:
    discover = request("server/discover")
    assert mismatch(discover, mcp_protocol_version=V, mcp_method="server/discover") is None
    assert "MCP-Protocol-Version header is missing" in (mismatch(discover, mcp_method="server/discover") or "")
    assert "does not match body value '2026-07-28'" in (mismatch(discover, mcp_protocol_version="2025-11-25", mcp_method="server/discover") or "")
    assert "Mcp-Method header is missing" in (mismatch(discover, mcp_protocol_version=V) or "")
    assert "'tools/list' does not match" in (mismatch(discover, mcp_protocol_version=V, mcp_method="tools/list") or "")
    # values are case-sensitive
    assert mismatch(discover, mcp_protocol_version=V, mcp_method="Server/Discover") is not None

    call = request("tools/call", {"name": "echo", "arguments": {}})
    ok = {"mcp_protocol_version": V, "mcp_method": "tools/call"}
    assert mismatch(call, **ok, mcp_name="echo") is None
    assert "Mcp-Name header is missing" in (mismatch(call, **ok) or "")
    assert "'other' does not match body value 'echo'" in (mismatch(call, **ok, mcp_name="other") or "")
    read = request("resources/read", {"uri": "file:///a b.txt"})
    assert mismatch(read, mcp_protocol_version=V, mcp_method="resources/read", mcp_name="file:///a b.txt") is None
    prompt = request("prompts/get", {"name": "p"})
    assert mismatch(prompt, mcp_protocol_version=V, mcp_method="prompts/get", mcp_name="p") is None


def test_mcp_name_of_task_methods_is_the_task_id() -> None:
    """The Tasks extension's routing header: on tasks/get, tasks/update and tasks/cancel, Mcp-Name
    carries params.taskId; one that disagrees is -32020 (the conformance suite's tasks-request-headers
    sends a wrong one on tasks/get). A missing one is tolerated: the body's taskId is acted on."""
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        msg = request(method, {"taskId": "t-1", "inputResponses": {}} if method == "tasks/update" else {"taskId": "t-1"})
        ok = {"mcp_protocol_version": V, "mcp_method": method}
        assert mismatch(msg, **ok, mcp_name="t-1") is None, method
        assert mismatch(msg, **ok, mcp_name=b64("t-1")) is None, method
        assert "'t-2' does not match body value 't-1'" in (mismatch(msg, **ok, mcp_name="t-2") or ""), method
        assert mismatch(msg, **ok) is None, method
    # a method that names nothing is not checked against any body field
    assert mismatch(request("tools/list"), mcp_protocol_version=V, mcp_method="tools/list", mcp_name="anything") is None


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def test_base64_sentinel_of_mcp_name() -> None:
    ok = {"mcp_protocol_version": V, "mcp_method": "tools/call"}
    for name in ("Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?=", "plain"):
        call = request("tools/call", {"name": name})
        assert mismatch(call, **ok, mcp_name=b64(name)) is None, name
    call = request("tools/call", {"name": "Hello, 世界"})
    assert "visible ASCII" in (mismatch(call, **ok, mcp_name="Hello, 世界".encode()) or "")
    assert "base64" in (mismatch(call, **ok, mcp_name="=?base64?not base64!?=") or "")
    assert "base64" in (mismatch(call, **ok, mcp_name="=?base64?" + base64.b64encode(b"\xff").decode() + "?=") or "")
    # the markers are case-sensitive: an upper-case sentinel is a plain value, compared as is
    assert mismatch(call, **ok, mcp_name="=?BASE64?SGVsbG8sIOS4lueVjA==?=") is not None


def test_x_mcp_header_parameters() -> None:
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "nested": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
        "query": {"type": "string"},
    }}
    params = httprules.param_headers(schema)
    assert isinstance(params, list)
    assert [(p.token, p.path) for p in params] == [("Region", ("region",)), ("Count", ("count",)), ("Dry-Run", ("dry",)),
                                                   ("Tenant", ("nested", "tenant"))]
    table = {"sql": params}
    ok = {"mcp_protocol_version": V, "mcp_method": "tools/call", "mcp_name": "sql"}

    def call(arguments: dict[str, Any], **headers: str) -> str | None:
        return mismatch(request("tools/call", {"name": "sql", "arguments": arguments}), table, **ok, **headers)

    args = {"region": "us-west1", "count": 42, "dry": True, "nested": {"tenant": "Ünïcode"}, "query": "SELECT 1"}
    full = {"mcp_param_region": "us-west1", "mcp_param_count": "42", "mcp_param_dry_run": "true",
            "mcp_param_tenant": b64("Ünïcode")}
    assert call(args, **full) is None
    assert call(args, **{**full, "mcp_param_count": "42.0"}) is None  # integers compare numerically
    assert "Mcp-Param-Count header value '43'" in (call(args, **{**full, "mcp_param_count": "43"}) or "")
    assert "Mcp-Param-Dry-Run" in (call(args, **{**full, "mcp_param_dry_run": "True"}) or "")
    missing = dict(full)
    del missing["mcp_param_region"]
    assert "the Mcp-Param-Region header is missing" in (call(args, **missing) or "")
    # a value that is absent or null: the header must be omitted, and is not expected
    assert call({"query": "x", "region": None}) is None
    assert "present but the body has no value" in (call({"query": "x"}, mcp_param_region="us-west1") or "")
    # a tool without annotations, or not in the table, has no parameter headers to check
    assert mismatch(request("tools/call", {"name": "other", "arguments": args}), table,
                    mcp_protocol_version=V, mcp_method="tools/call", mcp_name="other") is None


@pytest.mark.parametrize(("schema", "why"), [
    ({"type": "object", "properties": {"a": {"type": "number", "x-mcp-header": "A"}}}, "needs type"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}, "token"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}, "token"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "X\r\nY"}}}, "token"),
    ({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Dup"},
                                       "b": {"type": "string", "x-mcp-header": "dup"}}}, "twice"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}},
     "not reachable"),
    ({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}, "not reachable"),
])
def test_invalid_annotations(schema: dict[str, Any], why: str) -> None:
    found = httprules.param_headers(schema)
    assert isinstance(found, str) and why in found


def test_legacy_and_notifications_are_not_header_checked() -> None:
    initialize = jsonrpc.decode(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}')
    assert mismatch(initialize) is None
    legacy = request("tools/list", version="2025-11-25")
    assert mismatch(legacy) is None
    note = jsonrpc.decode(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}')
    assert mismatch(note) is None
    # a modern header on a legacy body is still checked (the header claims the stateless era)
    assert mismatch(legacy, mcp_protocol_version=V, mcp_method="tools/list") is not None


def test_status_for_errors() -> None:
    def err(code: int) -> dict[str, Any]:
        return errors.error_response(1, code, None)

    assert httprules.status_for(err(-32020)) == 400
    assert httprules.status_for(err(-32022)) == 400
    assert httprules.status_for(err(-32021)) == 400
    assert httprules.status_for(err(-32601)) == 404
    assert httprules.status_for(err(-32700)) == 400 and httprules.status_for(err(-32600)) == 400
    assert httprules.status_for(err(-32603)) == 200  # an answer to a well-formed request
    assert httprules.status_for(err(-31999)) == 200
    assert httprules.status_for({"jsonrpc": "2.0", "id": 1, "result": {}}) == 200


def test_json_or_sse() -> None:
    final = Send({"id": 1}, b'{"id":1}\n', True)
    note = Send({"method": "notifications/progress"}, b"{}\n")
    assert httprules.choose_body(Plan(1, [final])) == "json"
    assert httprules.choose_body(Plan(1, [final]), "sse") == "sse"
    assert httprules.choose_body(Plan(1, [note, final])) == "sse"
    assert httprules.choose_body(Plan(1, [note, final]), "json") == "sse"  # JSON cannot carry the progress
    assert httprules.choose_body(Plan(1, [Sleep(1), final])) == "sse"
    assert httprules.choose_body(Plan(1, [Sleep(1), final]), "json") == "json"
    assert httprules.choose_body(Plan(1, [note, Park()]), "json") == "sse"
    assert httprules.choose_body(Plan(1, [Emit("tools/list_changed"), final]), "json") == "sse"
    assert httprules.choose_body(Plan(1, [final], rest=iter(())), "json") == "sse"


def test_sse_framing() -> None:
    assert httprules.sse_event(b'{"a":1}') == b'event: message\ndata: {"a":1}\n\n'
    assert httprules.sse_event(b"a\nb\r\nc") == b"event: message\ndata: a\ndata: b\ndata: c\n\n"
    assert httprules.KEEPALIVE.startswith(b":")


def test_header_map_joins_repeats() -> None:
    assert httprules.header_map([(b"Accept", b"application/json"), (b"accept", b"text/event-stream")]) == {
        b"accept": b"application/json, text/event-stream"}
