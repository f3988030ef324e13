"""The default protocol behaviour of revision 2026-07-28, over the fake link.

One section per numbered item of the protocol behaviour the mock has by default.
No process: bytes go to the real shell on memory streams (``fakelink.py``),
which runs the plans on a virtual clock. Every message the mock writes is
validated against the official JSON Schema with the ``schema`` fixture.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import META, call, line, request
from support.engines import bundled, engine_for

from mockmcp.core.connection import Connection
from mockmcp.scenario.loader import load
from mockmcp.launch.boot import new_engine
from support.process import mockmcp_prefix

SERVER_INFO = "io.modelcontextprotocol/serverInfo"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"


def default_link() -> FakeLink:
    return FakeLink(bundled("default"))


def checked(schema: Any, link: FakeLink, *messages: Any) -> list[dict[str, Any]]:
    """Send, then validate every line written (the method of each response looked up by id)."""
    before = len(link.written)
    out = link.send(*messages)
    methods = {m["id"]: m["method"] for m in messages if isinstance(m, dict) and "id" in m and "method" in m}
    for raw in link.written[before:]:
        for ln in raw.splitlines(keepends=True):
            if ln.strip():
                msg = schema.check_line(ln if ln.endswith(b"\n") else ln + b"\n", None)
                if "id" in msg:
                    schema.check(msg, methods.get(msg["id"]))
    return out


def one(schema: Any, link: FakeLink, message: Any) -> dict[str, Any]:
    out = checked(schema, link, message)
    assert len(out) == 1, out
    return out[0]


def error_of(msg: dict[str, Any]) -> dict[str, Any]:
    assert "error" in msg, msg
    return msg["error"]


# ---------------------------------------------------------------- 1. framing


def test_one_compact_line_per_message_and_blank_lines_ignored(schema):
    link = default_link()
    data = b"\n   \n" + json.dumps(request(1, "tools/list")).encode() + b"\r\n\n" + json.dumps(request(2, "prompts/list")).encode() + b"\n"
    out = checked(schema, link, data)
    assert [m["id"] for m in out] == [1, 2]
    written = b"".join(link.written)
    assert written.count(b"\n") == 2
    for ln in written.splitlines():
        assert ln == json.dumps(json.loads(ln), separators=(",", ":"), ensure_ascii=False).encode()


def test_utf8_and_newlines_in_values_stay_on_one_line(schema):
    link = default_link()
    text = "héllo\nwörld ☃\r\n\u2028end"
    out = checked(schema, link, call(1, "echo", text=text))
    assert out[0]["result"]["content"][0]["text"] == text
    assert b"".join(link.written).count(b"\n") == 1


def test_line_split_across_chunks(schema):
    link = default_link()
    data = json.dumps(request(7, "tools/list")).encode() + b"\n"
    assert link.send(data[:10]) == []
    out = checked(schema, link, data[10:])
    assert out[0]["id"] == 7


# ---------------------------------------------------------------- 2. JSON-RPC


def test_invalid_json_is_parse_error_without_id(schema):
    link = default_link()
    msg = one(schema, link, b"{not json\n")
    assert error_of(msg)["code"] == -32700
    assert "id" not in msg


def test_invalid_utf8_is_parse_error(schema):
    msg = one(schema, default_link(), b'{"a": "\xff"}\n')
    assert error_of(msg)["code"] == -32700 and "id" not in msg


@pytest.mark.parametrize(
    "raw, has_id",
    [
        (b"[]\n", False),
        (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]\n', False),
        (b"3\n", False),
        (b'"text"\n', False),
        (b"null\n", False),
        (b'{"id":1,"method":"tools/list"}\n', True),
        (b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}\n', True),
        (b'{"jsonrpc":"2.0","id":1,"method":3}\n', True),
        (b'{"jsonrpc":"2.0","id":1}\n', True),
        (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}\n', False),
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}\n', False),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}\n', False),
    ],
)
def test_invalid_requests(schema, raw, has_id):
    msg = one(schema, default_link(), raw)
    assert error_of(msg)["code"] == -32600
    assert ("id" in msg) is has_id
    if has_id:
        assert msg["id"] == 1


def test_unknown_method(schema):
    msg = one(schema, default_link(), request(1, "foo/bar"))
    assert msg["id"] == 1 and error_of(msg)["code"] == -32601


@pytest.mark.parametrize(
    "method, params",
    [
        ("tools/call", {"name": 3}),
        ("tools/call", {}),
        ("tools/call", {"name": "echo", "arguments": [1]}),
        ("prompts/get", {"name": "code_review", "arguments": {"code": 3}}),
        ("resources/read", {}),
        ("completion/complete", {"ref": "x"}),
    ],
)
def test_bad_params(schema, method, params):
    msg = one(schema, default_link(), request(1, method, params))
    assert error_of(msg)["code"] == -32602


def test_params_not_an_object(schema):
    msg = one(schema, default_link(), b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}\n')
    assert msg["id"] == 4 and error_of(msg)["code"] == -32602


def test_notifications_never_get_a_response():
    link = default_link()
    out = link.send(
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "foo/unknown", "params": {}},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "method": "tools/list", "params": 3},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
    )
    assert out == [] and link.written == []


def test_the_link_survives_every_bad_input(schema):
    link = default_link()
    garbage = [b"\x00\x01\n", b"{\n", b"[[[[\n", b"1e999999\n", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":NaN}}}\n']
    for g in garbage:
        checked(schema, link, g)
    out = checked(schema, link, call(2, "echo", text="alive"))
    assert out[-1]["result"]["content"][0]["text"] == "alive"


def test_client_responses_are_not_answered():
    link = default_link()
    assert link.send({"jsonrpc": "2.0", "id": 1, "result": {}}) == []


# ---------------------------------------------------------------- 3. per-request _meta


@pytest.mark.parametrize("missing", [PV, CC])
def test_missing_meta_key_names_the_key(schema, missing):
    meta = {k: v for k, v in META.items() if k != missing}
    msg = one(schema, default_link(), {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
    err = error_of(msg)
    assert err["code"] == -32602 and missing in err["message"]


def test_missing_meta_entirely_names_both_keys(schema):
    msg = one(schema, default_link(), {"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
    err = error_of(msg)
    assert err["code"] == -32602 and PV in err["message"] and CC in err["message"]


def test_client_info_is_optional(schema):
    meta = {PV: "2026-07-28", CC: {}}
    msg = one(schema, default_link(), {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
    assert "result" in msg


def test_unsupported_version(schema):
    msg = one(schema, default_link(), request(1, "tools/list", meta={PV: "2025-06-18"}))
    err = error_of(msg)
    assert err["code"] == -32022
    assert err["data"] == {"supported": ["2026-07-28"], "requested": "2025-06-18"}


def test_scenario_versions_decide_support(schema):
    link = FakeLink(engine_for("mockmcp: 1\nprotocol: {versions: ['2026-07-28', '2027-01-01']}\n"))
    ok = one(schema, link, request(1, "server/discover", meta={PV: "2027-01-01"}))
    assert ok["result"]["supportedVersions"] == ["2026-07-28", "2027-01-01"]
    err = error_of(one(schema, link, request(2, "server/discover", meta={PV: "2024-11-05"})))
    assert err["data"]["supported"] == ["2026-07-28", "2027-01-01"]


def test_no_state_between_requests(schema):
    """A good request does not make a later request without _meta acceptable, nor the reverse."""
    link = default_link()
    assert "result" in one(schema, link, request(1, "tools/list"))
    bad = one(schema, link, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    assert error_of(bad)["code"] == -32602
    old = one(schema, link, request(3, "tools/list", meta={PV: "2025-06-18"}))
    assert error_of(old)["code"] == -32022
    assert "result" in one(schema, link, request(4, "tools/list"))
    # an initialize attempt changes nothing either
    one(schema, link, request(5, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}))
    assert error_of(one(schema, link, request(6, "tools/list", meta={PV: "2025-06-18"})))["code"] == -32022


# ---------------------------------------------------------------- 4. server/discover


def test_discover(schema):
    msg = one(schema, default_link(), request(1, "server/discover"))
    r = msg["result"]
    assert r["supportedVersions"] == ["2026-07-28"]
    assert set(r["capabilities"]) == {"tools", "prompts", "resources", "completions"}
    assert r["instructions"].startswith("A demo server")
    assert r["ttlMs"] == 60000 and r["cacheScope"] == "public"
    assert r["_meta"][SERVER_INFO]["name"] == "mockmcp-default"
    assert r["_meta"][SERVER_INFO]["version"] == "1.0.0"
    assert r["resultType"] == "complete"


def test_discover_capabilities_derived_from_what_is_defined(schema):
    link = FakeLink(engine_for("mockmcp: 1\ntools: [{name: t}]\n"))
    r = one(schema, link, request(1, "server/discover"))["result"]
    assert set(r["capabilities"]) == {"tools"}
    assert "instructions" not in r


def test_discover_explicit_capabilities(schema):
    link = FakeLink(engine_for("mockmcp: 1\ncapabilities: {tools: {}, logging: {}}\ntools: [{name: t}]\n"))
    r = one(schema, link, request(1, "server/discover"))["result"]
    assert r["capabilities"] == {"tools": {}, "logging": {}}


# ---------------------------------------------------------------- 5. resultType, serverInfo, caching

ALL_RESULTS = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "code_review", "arguments": {"code": "x = 1"}}),
    ("resources/list", {}),
    ("resources/read", {"uri": "file:///project/README.md"}),
    ("resources/templates/list", {}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "code_review"}, "argument": {"name": "language", "value": ""}}),
]
CACHEABLE = {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/read", "resources/templates/list"}


@pytest.mark.parametrize("method, params", ALL_RESULTS)
def test_every_result_has_result_type_and_server_info(schema, method, params):
    r = one(schema, default_link(), request(1, method, params))["result"]
    assert r["resultType"] == "complete"
    assert r["_meta"][SERVER_INFO] == {"name": "mockmcp-default", "version": "1.0.0", "title": "mockmcp default scenario"}
    if method in CACHEABLE:
        assert r["ttlMs"] == 60000 and r["cacheScope"] == "public"
    else:
        assert "ttlMs" not in r and "cacheScope" not in r


def test_server_info_can_be_turned_off(schema):
    link = FakeLink(engine_for("mockmcp: 1\nprotocol: {serverInfo: false}\ntools: [{name: t, replies: [{steps: [{text: hi}]}]}]\n"))
    for i, method in enumerate(["server/discover", "tools/list", "tools/call"]):
        r = one(schema, link, request(i, method, {"name": "t"} if method == "tools/call" else {}))["result"]
        assert SERVER_INFO not in r.get("_meta", {})


CACHE_YAML = """
mockmcp: 1
cache:
  ttlMs: 5000
  cacheScope: private
  tools: {ttlMs: 100}
  read: {cacheScope: public}
tools: [{name: t}]
prompts: [{name: p}]
resources:
  - {uri: 'mem://a', name: a, text: A}
  - {uri: 'mem://b', name: b, text: B, ttlMs: 7, cacheScope: private}
"""


def test_cache_defaults_and_overrides(schema):
    link = FakeLink(engine_for(CACHE_YAML))

    def hints(rid: int, method: str, params: dict[str, Any] | None = None) -> tuple[Any, Any]:
        r = one(schema, link, request(rid, method, params))["result"]
        return r["ttlMs"], r["cacheScope"]

    assert hints(1, "server/discover") == (5000, "private")
    assert hints(2, "tools/list") == (100, "private")
    assert hints(3, "prompts/list") == (5000, "private")
    assert hints(4, "resources/read", {"uri": "mem://a"}) == (5000, "public")
    assert hints(5, "resources/read", {"uri": "mem://b"}) == (7, "private")


# ---------------------------------------------------------------- 6. pagination

PAGED_YAML = """
mockmcp: 1
protocol: {pageSize: 2}
tools: [{name: t1}, {name: t2}, {name: t3}, {name: t4}, {name: t5}]
prompts: [{name: p1}, {name: p2}, {name: p3}]
resources: [{uri: 'mem://1', name: r1}, {uri: 'mem://2', name: r2}, {uri: 'mem://3', name: r3}]
resourceTemplates: [{uriTemplate: 'a://{x}', name: a}, {uriTemplate: 'b://{x}', name: b}, {uriTemplate: 'c://{x}', name: c}]
"""


def walk(schema: Any, link: FakeLink, method: str, key: str, field: str) -> tuple[list[str], list[str]]:
    names, cursors, cursor, rid = [], [], None, 100
    while True:
        rid += 1
        r = one(schema, link, request(rid, method, {"cursor": cursor} if cursor else {}))["result"]
        assert len(r[key]) <= 2
        names += [item[field] for item in r[key]]
        cursor = r.get("nextCursor")
        if cursor is None:
            return names, cursors
        cursors.append(cursor)


@pytest.mark.parametrize(
    "method, key, field, expected",
    [
        ("tools/list", "tools", "name", ["t1", "t2", "t3", "t4", "t5"]),
        ("prompts/list", "prompts", "name", ["p1", "p2", "p3"]),
        ("resources/list", "resources", "name", ["r1", "r2", "r3"]),
        ("resources/templates/list", "resourceTemplates", "name", ["a", "b", "c"]),
    ],
)
def test_pagination(schema, method, key, field, expected):
    link = FakeLink(engine_for(PAGED_YAML))
    names, cursors = walk(schema, link, method, key, field)
    assert names == expected
    # cursors are opaque (not a bare number) and deterministic
    assert all(not c.isdigit() for c in cursors)
    assert walk(schema, link, method, key, field) == (names, cursors)


def test_no_page_size_returns_everything(schema):
    r = one(schema, default_link(), request(1, "tools/list"))["result"]
    assert [t["name"] for t in r["tools"]] == ["echo", "add", "get_weather"]
    assert "nextCursor" not in r


@pytest.mark.parametrize("cursor", ["garbage", "", 3, True, "bW9ja21jcDp0b29sczo5OQ"])
def test_bad_cursor(schema, cursor):
    link = FakeLink(engine_for(PAGED_YAML))
    err = error_of(one(schema, link, request(1, "tools/list", {"cursor": cursor})))
    assert err["code"] == -32602 and "cursor" in err["message"]


def test_cursor_of_one_list_is_rejected_by_another(schema):
    link = FakeLink(engine_for(PAGED_YAML))
    cursor = one(schema, link, request(1, "tools/list"))["result"]["nextCursor"]
    assert error_of(one(schema, link, request(2, "prompts/list", {"cursor": cursor})))["code"] == -32602


# ---------------------------------------------------------------- 7. tools, prompts, resources, completion


def test_tools_list_passes_every_tool_field_through(schema):
    r = one(schema, default_link(), request(1, "tools/list"))["result"]
    add = next(t for t in r["tools"] if t["name"] == "add")
    assert add["outputSchema"]["required"] == ["sum"]
    assert add["inputSchema"]["properties"] == {"a": {"type": "number"}, "b": {"type": "number"}}
    echo = next(t for t in r["tools"] if t["name"] == "echo")
    assert echo["annotations"] == {"readOnlyHint": True}
    assert "replies" not in echo


def test_tools_call_echo_and_add(schema):
    link = default_link()
    out = checked(
        schema,
        link,
        call(1, "echo", text="ping"),
        call(2, "add", a=2, b=3.5),
    )
    assert out[0]["result"]["content"] == [{"type": "text", "text": "ping"}]
    assert out[1]["result"]["structuredContent"] == {"sum": 5.5}
    assert out[1]["result"]["content"][0]["text"] == "5.5"


def test_tools_call_unknown_tool(schema):
    err = error_of(one(schema, default_link(), call(1, "nope")))
    assert err["code"] == -32602 and "nope" in err["message"]


def test_tool_level_failure_is_an_is_error_result(schema):
    r = one(schema, default_link(), call(1, "add", a="x"))["result"]
    assert r["isError"] is True and r["content"][0]["type"] == "text"


def test_scripted_error_and_delay(schema):
    link = default_link()
    err = error_of(one(schema, link, call(1, "get_weather", city="Atlantis")))
    assert err == {"code": -32602, "message": "Unknown city: Atlantis", "data": {"city": "Atlantis"}}
    r = one(schema, link, call(2, "get_weather", city="Oslo"))["result"]
    assert "Oslo" in r["content"][0]["text"]
    assert link.timeline[-1][0] == pytest.approx(0.05)


def test_prompts_get(schema):
    link = default_link()
    r = one(schema, link, request(1, "prompts/get", {"name": "code_review", "arguments": {"code": "x = 1", "language": "python"}}))["result"]
    assert r["messages"][0]["content"]["text"] == "Please review this python:\nx = 1"
    r = one(schema, link, request(2, "prompts/get", {"name": "code_review", "arguments": {"code": "y"}}))["result"]
    assert r["messages"][0]["content"]["text"] == "Please review this code:\ny"


def test_prompts_get_unknown_prompt(schema):
    err = error_of(one(schema, default_link(), request(1, "prompts/get", {"name": "nope"})))
    assert err["code"] == -32602 and "nope" in err["message"]


def test_prompts_get_missing_required_argument(schema):
    err = error_of(one(schema, default_link(), request(1, "prompts/get", {"name": "code_review", "arguments": {"language": "go"}})))
    assert err["code"] == -32602 and "code" in err["message"]
    assert err["data"] == {"missing": ["code"]}


def test_resources_read_static_text_and_blob(schema):
    link = default_link()
    r = one(schema, link, request(1, "resources/read", {"uri": "file:///project/README.md"}))["result"]
    assert r["contents"] == [{"uri": "file:///project/README.md", "mimeType": "text/markdown", "text": "# Demo project\n\nThis file is served by mockmcp.\n"}]
    r = one(schema, link, request(2, "resources/read", {"uri": "file:///project/logo.png"}))["result"]
    assert r["contents"][0]["blob"].startswith("iVBORw0KGgo") and r["contents"][0]["mimeType"] == "image/png"


def test_resources_read_template(schema):
    r = one(schema, default_link(), request(1, "resources/read", {"uri": "weather://forecast/Paris"}))["result"]
    assert r["contents"][0]["uri"] == "weather://forecast/Paris"
    assert json.loads(r["contents"][0]["text"]) == {"city": "Paris", "forecast": "sunny"}


def test_rfc6570_simple_expansion_variables(schema):
    link = FakeLink(
        engine_for(
            """
mockmcp: 1
resourceTemplates:
  - uriTemplate: 'repo://{owner}/{name}/files{+path}'
    name: files
    replies: [{steps: [{text: '{{ vars.owner }}|{{ vars.name }}|{{ vars.path }}'}]}]
"""
        )
    )
    r = one(schema, link, request(1, "resources/read", {"uri": "repo://octo/cat/files/src/main.py"}))["result"]
    assert r["contents"][0]["text"] == "octo|cat|/src/main.py"
    # a simple {var} does not match across '/'
    assert error_of(one(schema, link, request(2, "resources/read", {"uri": "repo://octo/cat/x/files/a"})))["code"] == -32602


@pytest.mark.parametrize("uri", ["file:///nope", "weather://forecast/", "weather://forecast/a/b"])
def test_resources_read_unknown_uri_is_invalid_params(schema, uri):
    err = error_of(one(schema, default_link(), request(1, "resources/read", {"uri": uri})))
    assert err["code"] == -32602 and err["code"] != -32002
    assert uri in err["message"]


def test_completion(schema):
    link = default_link()
    r = one(schema, link, request(1, "completion/complete", {"ref": {"type": "ref/prompt", "name": "code_review"}, "argument": {"name": "language", "value": "ty"}}))["result"]
    assert r["completion"] == {"values": ["typescript"], "total": 1, "hasMore": False}
    r = one(schema, link, request(2, "completion/complete", {"ref": {"type": "ref/prompt", "name": "code_review"}, "argument": {"name": "code", "value": ""}}))["result"]
    assert r["completion"]["values"] == []
    err = error_of(one(schema, link, request(3, "completion/complete", {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}})))
    assert err["code"] == -32602


@pytest.mark.parametrize(
    "method, params",
    [
        ("prompts/list", {}),
        ("prompts/get", {"name": "x"}),
        ("resources/list", {}),
        ("resources/read", {"uri": "mem://x"}),
        ("resources/templates/list", {}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}}),
    ],
)
def test_method_behind_capability_not_offered(schema, method, params):
    link = FakeLink(engine_for("mockmcp: 1\ntools: [{name: t}]\n"))
    err = error_of(one(schema, link, request(1, method, params)))
    assert err["code"] == -32601


def test_tools_methods_without_tools_capability(schema):
    link = FakeLink(engine_for("mockmcp: 1\nprompts: [{name: p}]\n"))
    for i, method in enumerate(["tools/list", "tools/call"]):
        assert error_of(one(schema, link, request(i, method, {"name": "t"})))["code"] == -32601


# ---------------------------------------------------------------- 8. initialize


def test_initialize_gets_an_error_naming_supported_versions(schema):
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}
    msg = one(schema, default_link(), {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    err = error_of(msg)
    assert msg["id"] == 0
    assert "2026-07-28" in err["message"]
    assert err["data"]["supported"] == ["2026-07-28"]
    assert err["data"]["requested"] == "2025-06-18"


@pytest.mark.parametrize("era", ["modern", "dual"])
def test_initialize_in_the_stateless_envelope_is_method_not_found_on_stdio(schema, tmp_path, era):
    """An initialize that carries a 2026-07-28 ``_meta`` is a request of that revision, which has no
    such method: -32601 from the real process (never -32022 naming the version it asked for); the
    bare initialize of a dual-era client's fallback still gets its handshake or its -32022."""
    import subprocess
    import sys

    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"mockmcp: 1\nprotocol: {{era: {era}}}\ntools: [{{name: t}}]\n")
    hello = {"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    legacy = {**hello, "protocolVersion": "2025-11-25"}
    lines = line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {**hello, "_meta": META}})
    lines += line({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": legacy})
    proc = subprocess.run([*mockmcp_prefix(), "run", str(scenario)], input=lines,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    first, second = (json.loads(x) for x in proc.stdout.splitlines())
    schema.check(first, "initialize")
    assert first["id"] == 1 and first["error"]["code"] == -32601, first
    assert "server/discover" in first["error"]["message"]
    if era == "dual":
        assert second["result"]["protocolVersion"] == "2025-11-25"
    else:
        assert second["error"]["code"] == -32022 and second["error"]["data"]["requested"] == "2025-11-25"


# ---------------------------------------------------------------- 9. duplicate ids in flight

HANG_YAML = """
mockmcp: 1
tools:
  - name: slow
    replies: [{steps: [{hang: true}]}]
  - name: fast
    replies: [{steps: [{text: fast}]}]
"""


def test_duplicate_in_flight_id_is_rejected_and_the_original_unaffected(schema):
    link = FakeLink(engine_for(HANG_YAML))
    assert link.send(call(1, "slow")) == []
    assert 1 in link.open
    err = one(schema, link, call(1, "fast"))
    assert err["id"] == 1 and error_of(err)["code"] == -32600
    # the original is still in flight, and still cancellable by its id
    assert 1 in link.open and 1 in link.engine.session.in_flight
    link.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert 1 not in link.engine.session.in_flight
    # once it is over, the id may be used again
    ok = one(schema, link, call(1, "fast"))
    assert ok["result"]["content"][0]["text"] == "fast"


def test_an_answered_id_can_be_reused(schema):
    link = default_link()
    for _ in range(3):
        assert "result" in one(schema, link, call("same", "echo", text="x"))


def test_string_and_integer_ids_are_distinct(schema):
    link = FakeLink(engine_for(HANG_YAML))
    link.send(call(1, "slow"))
    ok = one(schema, link, call("1", "fast"))
    assert ok["id"] == "1" and "result" in ok


# ---------------------------------------------------------------- 10. concurrency (plan level)


def test_slow_replies_are_planned_independently(schema):
    """Each request gets its own plan; a slow one holds no other (the shell runs them as tasks)."""
    outs = Connection(bundled("default")).receive_data(
        line(call(1, "get_weather", city="Rome"))
        + line(call(2, "echo", text="quick"))
    )
    assert [(o.request_id, o.immediate) for o in outs] == [(1, False), (2, True)]


@pytest.mark.parametrize(
    "method, params, meta",
    [
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": ["x"]}, "argument": {"name": "a", "value": ""}}, None),
        ("completion/complete", {"ref": {"type": "ref/resource", "uri": {"a": 1}}, "argument": {"name": "a", "value": ""}}, None),
        ("tools/list", {}, {"io.modelcontextprotocol/logLevel": ["debug"]}),
        ("tools/call", {"name": "add", "arguments": {"a": 1e308, "b": 1e308}}, None),
    ],
    ids=["unhashable-prompt-name", "unhashable-template-uri", "unhashable-log-level", "sum-overflows-to-inf"],
)
def test_odd_values_are_invalid_params_not_crashes(schema, method, params, meta):
    """Regressions: each of these used to raise inside the core (the process would have died)."""
    err = error_of(one(schema, default_link(), request(1, method, params, meta)))
    assert err["code"] == -32602


def test_unmatched_scripted_reply_is_internal_error_with_near_miss(schema):
    link = FakeLink(engine_for("mockmcp: 1\ntools:\n  - name: only\n    replies: [{when: {arguments: {x: 1}}, steps: [{text: one}]}]\n"))
    err = error_of(one(schema, link, call(1, "only", x=2)))
    assert err["code"] == -32603 and "no rule" in err["message"]
    assert err["data"]["nearMiss"]["reason"] == "argument 'x' is 2, rule wants 1"


# ---------------------------------------------------------------- the process never dies on input (fuzzed)

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from(["name", "arguments", "uri", "cursor", "ref", "argument", "notifications", "requestState", "inputResponses", "x"])
_METHODS = [
    "server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/read",
    "resources/templates/list", "completion/complete", "subscriptions/listen", "initialize", "ping", "notifications/cancelled",
]
_names = st.sampled_from(["echo", "add", "get_weather", "code_review", "file:///project/README.md", "weather://forecast/x", "ref/prompt", "ref/resource", "language", "text", "a", "b", "city", "code", "name", "uri", "type", "value"])
_values = _json | _names
_params = st.fixed_dictionaries(
    {},
    optional={
        "name": _names | _json,
        "arguments": st.dictionaries(_names, _values, max_size=3) | _json,
        "uri": _names | _json,
        "cursor": _json,
        "ref": st.fixed_dictionaries(
            {"type": st.sampled_from(["ref/prompt", "ref/resource"]) | _json}, optional={"name": _values, "uri": _values}
        ) | _json,
        "argument": st.fixed_dictionaries({}, optional={"name": _values, "value": _values}) | _json,
        "notifications": st.dictionaries(
            st.sampled_from(["toolsListChanged", "promptsListChanged", "resourcesListChanged", "resourceSubscriptions"]), _values, max_size=3
        ) | _json,
        "requestState": _json,
        "inputResponses": st.dictionaries(_names, _values, max_size=2) | _json,
        "protocolVersion": _values,
    },
)
_meta = st.one_of(
    st.fixed_dictionaries(
        {PV: st.just("2026-07-28"), CC: st.just({}) | st.dictionaries(st.sampled_from(["elicitation", "sampling", "roots"]), _values, max_size=2)},
        optional={"progressToken": _json, "io.modelcontextprotocol/logLevel": st.sampled_from(["debug", "info", "error"]) | _json,
                  "io.modelcontextprotocol/clientInfo": _json},
    ),
    st.fixed_dictionaries({}, optional={PV: st.sampled_from(["2026-07-28", "2025-06-18"]) | _json, CC: _json}),
)
_ids = st.integers(-3, 3) | st.text(max_size=3) | st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
_message = st.builds(
    lambda rid, has_id, method, params, meta: {"jsonrpc": "2.0", **({"id": rid} if has_id else {}), "method": method, "params": {**params, "_meta": meta}},
    _ids, st.booleans(), st.sampled_from(_METHODS) | st.text(max_size=10), _params, _meta,
)
_LOADED: dict[str, Any] = {}


def _scenario(name: str) -> Any:
    if name not in _LOADED:
        _LOADED[name] = load(name, use_cache=False)[0]
    return _LOADED[name]


# 100 examples: tests/wire/test_fuzz.py now covers hostile lines in depth (grammar-based, through the
# core and the real process); this one keeps checking every answer against the schema.
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenario=st.sampled_from(["default", "prompts", "resources", "pagination", "mrtr"]),
    messages=st.lists(_message | st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"") + b"\n"), min_size=1, max_size=6),
)
def test_fuzzed_input_never_breaks_the_core(schema, scenario, messages):
    # the method each response answers, where the id says it unambiguously
    methods: dict[Any, str | None] = {}
    for m in messages:
        if isinstance(m, dict) and type(m.get("id")) in (int, str):
            rid = m["id"]
            methods[rid] = m["method"] if methods.get(rid, m["method"]) == m["method"] else None
    with FakeLink(new_engine(_scenario(scenario))) as link:
        for m in messages:
            before = len(link.written)
            link.send(m)  # any exception here fails the test: the process would die
            for raw in link.written[before:]:
                msg = schema.check_line(raw)
                if "id" in msg and "result" in msg:
                    schema.check(msg, methods.get(msg["id"]))
        link.eof()


def test_parse_error_with_id_null_is_a_scenario_option(schema):
    link = FakeLink(engine_for("mockmcp: 1\nprotocol: {parseErrorIdNull: true}\n"))
    out = link.send(b"{oops\n", b"[]\n")
    assert [m["error"]["code"] for m in out] == [-32700, -32600]
    assert all("id" in m and m["id"] is None for m in out)
    # requests with an id are unaffected
    msg = one(schema, link, request(1, "nope/nope"))
    assert msg["id"] == 1


def test_an_over_long_line_is_rejected_and_the_link_recovers(schema):
    link = FakeLink(bundled("default"), max_line=400)
    big = json.dumps(call(1, "echo", text="x" * 1000)).encode() + b"\n"
    out = checked(schema, link, big[:150], big[150:700], big[700:])
    assert len(out) == 1 and error_of(out[0])["code"] == -32600 and "id" not in out[0]
    assert "400-byte line limit" in out[0]["error"]["message"]
    ok = one(schema, link, call(2, "echo", text="small"))
    assert ok["result"]["content"][0]["text"] == "small"
