"""Stateful replies: sequences (stop at the last or cycle) and named states with transitions.

State is per process: a restarted mock starts again from ``state.initial``
(shown end to end at the bottom).
"""

from __future__ import annotations

import json
from typing import Any

from support.process import run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import call, line, request
from support.engines import engine_for


SEQ = """
mockmcp: 1
tools:
  - name: flaky
    replies:
      - sequence: [[{error: {code: -32603}}], [{error: {code: -32603}}], [{text: ok}]]
  - name: cycle
    replies:
      - sequence: [[{text: a}], [{text: b}], [{text: c}]]
        cycle: true
"""


def texts(link: FakeLink, name: str, n: int, schema: Any) -> list[str]:
    out = []
    for i in range(n):
        (msg,) = link.send(call(f"{name}{i}", name))
        schema.check(msg, "tools/call")
        out.append(msg["result"]["content"][0]["text"] if "result" in msg else f"E{msg['error']['code']}")
    return out


def test_fail_twice_then_succeed_and_stay_at_the_last(schema):
    link = FakeLink(engine_for(SEQ))
    assert texts(link, "flaky", 5, schema) == ["E-32603", "E-32603", "ok", "ok", "ok"]


def test_cycle_starts_over(schema):
    link = FakeLink(engine_for(SEQ))
    assert texts(link, "cycle", 7, schema) == ["a", "b", "c", "a", "b", "c", "a"]


STATES = """
mockmcp: 1
state:
  initial: locked
  states: [locked, open]
tools:
  - name: login
    replies:
      - when: {state: locked}
        steps: [{setState: open}, {emit: {event: tools/list_changed}}, {text: welcome}]
      - steps: [{text: already in}]
  - name: logout
    states: [open]
    replies: [{steps: [{setState: locked}, {emit: {event: tools/list_changed}}, {text: bye}]}]
  - name: secret
    states: [open]
    replies: [{steps: [{text: "state is {{ state }}"}]}]
  - name: whoami
    replies:
      - when: {state: open}
        steps: [{text: user}]
      - when: {state: locked}
        steps: [{text: anonymous}]
"""


PER_STATE = """
mockmcp: 1
state: {initial: a}
tools:
  - name: go
    replies: [{steps: [{setState: b}, {emit: {event: prompts/list_changed}}, {emit: {event: resources/list_changed}}, {text: moved}]}]
prompts:
  - {name: in_a, states: [a]}
  - {name: in_b, states: [b]}
  - {name: always}
resources:
  - {uri: "file:///a", name: a, text: A, states: [a]}
  - {uri: "file:///b", name: b, text: B, states: [b]}
resourceTemplates:
  - {uriTemplate: "t://b/{x}", name: tb, states: [b], replies: [{steps: [{text: "{{ vars.x }}"}]}]}
"""


def test_prompts_resources_and_templates_differ_per_state(schema):
    link = FakeLink(engine_for(PER_STATE))

    def names(method: str, key: str, field: str) -> list[str]:
        (msg,) = link.send(request(method, method))
        schema.check(msg, method)
        return [x[field] for x in msg["result"][key]]

    assert names("prompts/list", "prompts", "name") == ["in_a", "always"]
    assert names("resources/list", "resources", "uri") == ["file:///a"]
    assert names("resources/templates/list", "resourceTemplates", "uriTemplate") == []
    (miss,) = link.send(request(1, "resources/read", {"uri": "file:///b"}))
    assert miss["error"]["code"] == -32602
    texts(link, "go", 1, schema)
    assert names("prompts/list", "prompts", "name") == ["in_b", "always"]
    assert names("resources/list", "resources", "uri") == ["file:///b"]
    assert names("resources/templates/list", "resourceTemplates", "uriTemplate") == ["t://b/{x}"]
    (read,) = link.send(request(2, "resources/read", {"uri": "t://b/7"}))
    schema.check(read, "resources/read")
    assert read["result"]["contents"][0]["text"] == "7"


def tool_names(link: FakeLink, rid: Any, schema: Any) -> list[str]:
    (msg,) = link.send(request(rid, "tools/list"))
    schema.check(msg, "tools/list")
    return [t["name"] for t in msg["result"]["tools"]]


def test_states_change_tool_lists_and_replies(schema):
    link = FakeLink(engine_for(STATES))
    assert tool_names(link, 1, schema) == ["login", "whoami"]
    assert texts(link, "whoami", 1, schema) == ["anonymous"]
    (err,) = link.send(call(2, "secret"))
    assert err["error"]["code"] == -32602  # not visible in this state
    assert texts(link, "login", 2, schema) == ["welcome", "already in"]
    assert tool_names(link, 3, schema) == ["login", "logout", "secret", "whoami"]
    assert texts(link, "secret", 1, schema) == ["state is open"]
    assert texts(link, "whoami", 1, schema) == ["user"]
    assert texts(link, "logout", 1, schema) == ["bye"]
    assert tool_names(link, 4, schema) == ["login", "whoami"]


def test_list_changed_goes_to_listening_subscriptions_then_the_list_differs(schema):
    link = FakeLink(engine_for(STATES))
    (ack,) = link.send(request("L", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    schema.check(ack)
    out = link.send(call(1, "login"))
    assert [m.get("method") for m in out] == ["notifications/tools/list_changed", None]
    for m in out:
        schema.check(m, "tools/call")
    assert out[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L"
    assert "secret" in tool_names(link, 2, schema)


def test_check_rejects_an_undeclared_state():
    import pytest
    from mockmcp.scenario.loader import load_text
    from mockmcp.scenario.problems import LoadError

    with pytest.raises(LoadError, match="unknown state 'opne'"):
        load_text(STATES.replace("setState: open", "setState: opne"), "<t>")


def test_state_is_per_process(tmp_path, schema):
    path = tmp_path / "s.yaml"
    path.write_text(STATES)
    data = line(call(1, "login")) + line(call(2, "login"))
    for _ in range(2):  # the second process starts over from `locked`
        proc = run_mock("run", str(path), input=data)
        msgs = sorted((json.loads(x) for x in proc.stdout.splitlines()), key=lambda m: m["id"])
        for m in msgs:
            schema.check(m, "tools/call")
        assert [m["result"]["content"][0]["text"] for m in msgs] == ["welcome", "already in"]
