"""Which scopes a body needs, and the cheap path that decides most bodies need none unparsed.

``ResourceServer.body_scopes`` looks for the names the scope needs name (a tool, a prompt, a
resource, else a method) in the body's bytes before parsing it: a body with none of them, and no
escape that could spell one differently, needs nothing beyond ``requiredScopes``. The answers
must be the ones a full parse gives, escapes, batches and needs added by the control channel
included.
"""

from __future__ import annotations

import json

import pytest

from mockmcp.core.auth.resource import ResourceServer
from mockmcp.core.auth.tokens import TokenTable
from mockmcp.scenario.model.auth import Auth, ProtectedResource, ScopeNeed

NEEDS = [ScopeNeed(scopes=["admin"], tool="admin_report"), ScopeNeed(scopes=["files"], resource="file:///é/x"),
         ScopeNeed(scopes=["prompts"], method="prompts/get")]


def resource(needs: list[ScopeNeed]) -> ResourceServer:
    config = Auth(resource=ProtectedResource(requiredScopes=["read"], scopes=needs))
    return ResourceServer(config, TokenTable(lambda: 0.0, lambda: "t"))


def call(tool: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}).encode()


@pytest.mark.parametrize(("body", "needed"), [
    (call("echo"), ()),
    (call("admin_report"), ("admin",)),
    (call("admin_report").replace(b"admin_report", b"admin\\u005freport"), ("admin",)),  # escaped: parsed
    (json.dumps({"method": "tools/call", "params": {"name": "echo", "arguments": {"t": "a\nb"}}}).encode(), ()),
    (json.dumps({"method": "resources/read", "params": {"uri": "file:///é/x"}}, ensure_ascii=False).encode(), ("files",)),
    (json.dumps({"method": "resources/read", "params": {"uri": "file:///é/x"}}).encode(), ("files",)),  # \u00e9
    (json.dumps([{"method": "prompts/get", "params": {"name": "p"}}, json.loads(call("admin_report"))]).encode(),
     ("prompts", "admin")),
    (call("echo admin_report"), ()),  # the name is there, the need does not apply: parsed, none
    (b"not json admin_report", ()),
])
def test_body_scopes(body: bytes, needed: tuple[str, ...]) -> None:
    assert resource(NEEDS).body_scopes(body) == needed


def test_a_need_the_control_channel_adds_is_looked_for_too() -> None:
    r = resource(NEEDS[:1])
    assert r.body_scopes(call("late")) == ()
    r.require(ScopeNeed(scopes=["late"], tool="late"))
    assert r.body_scopes(call("late")) == ("late",)
    r.require(ScopeNeed(scopes=["everything"]))  # no method, tool, prompt or resource: every request
    assert r.body_scopes(call("echo")) == () and "everything" in r.required


def test_no_needs_no_parse() -> None:
    assert resource([]).body_scopes(call("admin_report")) == ()
