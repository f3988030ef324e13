"""``protocol.unmatched: fail`` (what a cassette says): a request no rule answers fails loudly.

A cassette replays what was recorded; anything else must fail with the near miss (the closest
recorded request and what differs), never get the mock's built-in answer, which would pass a
test the real server might fail. Only the protocol's plumbing (``BUILTIN_WHEN_UNMATCHED``:
ping, discovery, the handshake, the lists, listen, the legacy connection state, the tasks
extension's polling) keeps its built-in answer. Each method the engine can answer is tried in
both eras; the default (``builtin``) keeps the built-in answers. In process (no subprocess).
"""

from __future__ import annotations

from typing import Any

import pytest
from support.engines import engine_for, plan_for
from support.messages import request

from mockmcp.wire import protocol as p
from mockmcp.core.actions import Plan
from mockmcp.core.engine import Engine
from mockmcp.core.legacy import _SESSION_METHODS
from mockmcp.core.methods import HANDLERS

SCENARIO = """\
mockmcp: 1
protocol: {{era: {era}, unmatched: {unmatched}}}
capabilities: {{tools: {{}}, prompts: {{}}, resources: {{subscribe: true}}, completions: {{}}, logging: {{}}}}
tools:
  - name: echo
    replies:
      - when: {{arguments: {{text: hi}}, exactArguments: true}}
        steps: [{{text: "echo: hi"}}]
  - name: listed
prompts:
  - name: review
    arguments: [{{name: code}}]
resources:
  - {{uri: "test://doc", name: doc}}
resourceTemplates:
  - {{uriTemplate: "test://items/{{id}}", name: item}}
methods:
  - method: completion/complete
    replies:
      - when: {{params: {{argument: {{name: code, value: pr}}}}}}
        steps: [{{result: {{completion: {{values: [print]}}}}}}]
  - method: custom/thing
    replies:
      - when: {{params: {{x: 1}}}}
        steps: [{{result: {{ok: true}}}}]
"""

# One request of every method the engine answers, none of them recorded (or scripted) above.
UNRECORDED: dict[str, dict[str, Any]] = {
    p.TOOLS_CALL: {"name": "echo", "arguments": {"text": "bye"}},
    p.PROMPTS_GET: {"name": "review", "arguments": {"code": "x"}},
    p.RESOURCES_READ: {"uri": "test://doc"},
    p.COMPLETE: {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "code", "value": "x"}},
    "custom/thing": {"x": 2},
}
# What the connection's plumbing is asked (its answers follow from the definitions and state).
PLUMBING: dict[str, dict[str, Any]] = {
    p.DISCOVER: {}, p.TOOLS_LIST: {}, p.PROMPTS_LIST: {}, p.RESOURCES_LIST: {}, p.RESOURCE_TEMPLATES_LIST: {},
    "ping": {}, p.LEGACY_SET_LEVEL: {"level": "info"}, p.LEGACY_SUBSCRIBE: {"uri": "test://doc"},
    p.LEGACY_UNSUBSCRIBE: {"uri": "test://doc"},
}


def _engine(era: str, unmatched: str) -> Engine:
    engine = engine_for(SCENARIO.format(era=era, unmatched=unmatched))
    if era == "legacy":
        init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": {"protocolVersion": p.LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        assert "result" in _answer(engine, init)
    return engine


def _msg(era: str, rid: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    if era == "legacy":
        return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return request(rid, method, params)


def _answer(engine: Engine, msg: dict[str, Any]) -> dict[str, Any]:
    plan = plan_for(engine, msg)
    assert isinstance(plan, Plan)
    sent = [a.message for a in plan.actions if getattr(a, "final", False)]
    assert len(sent) == 1, plan.actions
    return sent[0]  # type: ignore[no-any-return]


def test_the_rule_names_every_method_the_engine_answers() -> None:
    # every handler and every legacy connection method is either plumbing or fails loudly
    answered = set(HANDLERS) | set(_SESSION_METHODS) | {"ping", p.INITIALIZE}
    assert p.BUILTIN_WHEN_UNMATCHED <= answered
    assert answered - p.BUILTIN_WHEN_UNMATCHED == {p.TOOLS_CALL, p.PROMPTS_GET, p.RESOURCES_READ, p.COMPLETE}


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_an_unrecorded_request_fails_with_the_near_miss(era: str) -> None:
    engine = _engine(era, "fail")
    for n, (method, params) in enumerate(UNRECORDED.items()):
        answer = _answer(engine, _msg(era, n, method, params))
        error = answer.get("error")
        assert error is not None and error["code"] == p.INTERNAL_ERROR, (method, answer)
        assert "nearMiss" in error["data"], (method, error)
    reasons = {u["method"]: u["nearMiss"]["reason"] for u in engine.unmatched}
    assert set(reasons) == set(UNRECORDED)
    # the closest recorded request, and what differs from it
    assert '"bye"' in reasons[p.TOOLS_CALL] and '"hi"' in reasons[p.TOOLS_CALL]
    assert '"x"' in reasons[p.COMPLETE] and '"pr"' in reasons[p.COMPLETE]
    assert "has no rules" in reasons[p.PROMPTS_GET]  # nothing of it was recorded at all


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_recorded_requests_still_answer_and_plumbing_keeps_its_built_in_answer(era: str) -> None:
    engine = _engine(era, "fail")
    echo = _answer(engine, _msg(era, 1, p.TOOLS_CALL, {"name": "echo", "arguments": {"text": "hi"}}))
    assert echo["result"]["content"][0]["text"] == "echo: hi"
    done = _answer(engine, _msg(era, 2, p.COMPLETE, UNRECORDED[p.COMPLETE] | {"argument": {"name": "code", "value": "pr"}}))
    assert done["result"]["completion"]["values"] == ["print"]  # a legacy cassette's methods: rules answer too
    for n, (method, params) in enumerate(PLUMBING.items(), start=10):
        if (era == "modern") == (method in _SESSION_METHODS or method == "ping"):
            continue  # each era's own plumbing
        answer = _answer(engine, _msg(era, n, method, params))
        assert "result" in answer, (method, answer)
    assert engine.unmatched == []


def test_the_default_keeps_the_built_in_answers() -> None:
    engine = _engine("modern", "builtin")
    listed = _answer(engine, request(1, p.TOOLS_CALL, {"name": "listed", "arguments": {}}))
    assert listed["result"]["content"] == []
    completed = _answer(engine, request(2, p.COMPLETE, UNRECORDED[p.COMPLETE]))
    assert completed["result"]["completion"]["values"] == []
    assert _answer(engine, request(3, "custom/thing", {"x": 2}))["error"]["code"] == p.METHOD_NOT_FOUND


def test_the_near_miss_names_the_leaf_that_differs() -> None:
    engine = _engine("modern", "fail")
    _answer(engine, request(1, p.COMPLETE, UNRECORDED[p.COMPLETE]))
    (miss,) = engine.unmatched
    # not the whole argument object: the one value that differs, and what was recorded there
    assert miss["nearMiss"]["reason"] == 'params.argument.value is "x", rule wants "pr"'


def test_a_request_steps_expect_is_checked_like_a_when_pattern() -> None:
    from mockmcp.scenario.loader import load_text
    from mockmcp.scenario.problems import LoadError

    text = """\
mockmcp: 1
protocol: {era: legacy}
tools:
  - name: ask
    replies:
      - steps:
          - request: {method: roots/list, expect: {result: {roots: {$regex: "("}}}}
          - text: done
"""
    with pytest.raises(LoadError) as info:
        load_text(text, "s.yaml")
    (problem,) = info.value.problems
    assert problem.line == 7 and "$regex" in str(problem) and "expect" in str(problem), str(problem)
