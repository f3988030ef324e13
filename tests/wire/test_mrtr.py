"""input_required (multi round-trip) flows, over the fake link (the real shell on memory streams).

Every message the mock writes here is validated against the official schema.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import bundled, engine_for
from support.messages import request

from mockmcp.core.engine import Engine
from mockmcp.scenario.loader import load
from mockmcp.scenario.problems import LoadError

FORM = {"elicitation": {"form": {}}}
ALL = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": True}}

METHOD_KEYS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class Caller:
    """Drives the mrtr scenario the way a client's retry loop would."""

    def __init__(self, schema: Any, engine: Engine | None = None) -> None:
        self.schema = schema
        self.link = FakeLink(engine or bundled("mrtr"))
        self.next_id = 1

    def send(self, method: str, target: str, args: dict[str, Any] | None = None, caps: Any = ALL,
             responses: Any = None, state: Any = None, **extra: Any) -> dict[str, Any]:
        params: dict[str, Any] = {METHOD_KEYS[method]: target, **extra}
        if args is not None:
            params["arguments"] = args
        if responses is not None:
            params["inputResponses"] = responses
        if state is not None:
            params["requestState"] = state
        rid = self.next_id
        self.next_id += 1
        out = self.link.send(request(rid, method, params, {"io.modelcontextprotocol/clientCapabilities": caps}))
        assert len(out) == 1, out
        self.schema.check(out[0], method)
        assert out[0]["id"] == rid
        return out[0]

    def call(self, name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self.send("tools/call", name, args, **kw)


def result(msg: dict[str, Any]) -> dict[str, Any]:
    assert "result" in msg, msg
    return msg["result"]


def error(msg: dict[str, Any], code: int) -> dict[str, Any]:
    assert "error" in msg, msg
    assert msg["error"]["code"] == code, msg
    return msg["error"]


def text(msg: dict[str, Any]) -> str:
    r = result(msg)
    assert r["resultType"] == "complete", r
    if "content" in r:
        return r["content"][0]["text"]
    if "messages" in r:
        return r["messages"][0]["content"]["text"]
    return r["contents"][0]["text"]


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


# ------------------------------------------------------------------ tools/call flows


def test_confirm_action_accepted(schema):
    c = Caller(schema)
    first = result(c.call("confirm_action", {"action": "deploy"}, caps=FORM))
    assert first["resultType"] == "input_required"
    ask = first["inputRequests"]["confirm"]
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["message"] == "Really deploy?"  # a template over the request's arguments
    assert ask["params"]["requestedSchema"]["properties"]["confirm"] == {"type": "boolean", "title": "Confirm"}
    done = c.call("confirm_action", {"action": "deploy"}, caps=FORM,
                  responses={"confirm": accept(confirm=True)}, state=first["requestState"])
    assert text(done) == "done: deploy"
    assert not result(done).get("isError")


@pytest.mark.parametrize("answer", [
    {"action": "decline"},
    {"action": "cancel"},
    {"action": "accept", "content": {"confirm": False}},
])
def test_confirm_action_not_confirmed_is_an_error_result(schema, answer):
    c = Caller(schema)
    state = result(c.call("confirm_action", {"action": "deploy"}))["requestState"]
    out = result(c.call("confirm_action", {"action": "deploy"}, responses={"confirm": answer}, state=state))
    assert out["resultType"] == "complete"
    assert out["isError"] is True
    assert f"({answer['action']})" in out["content"][0]["text"]


def test_two_rounds_carries_the_first_answer_in_the_state(schema):
    c = Caller(schema)
    r1 = result(c.call("two_rounds"))
    assert list(r1["inputRequests"]) == ["name"]
    r2 = result(c.call("two_rounds", responses={"name": accept(name="Ada")}, state=r1["requestState"]))
    assert r2["resultType"] == "input_required"
    assert list(r2["inputRequests"]) == ["color"]
    assert r2["inputRequests"]["color"]["params"]["message"] == "Hello Ada, what is your favourite color?"
    assert r2["requestState"] != r1["requestState"]
    # The client only sends the latest answers; the name comes back from the protected state.
    r3 = c.call("two_rounds", responses={"color": accept(color="green")}, state=r2["requestState"])
    assert text(r3) == "Ada likes green"


def test_ask_model_uses_the_sampled_text(schema):
    c = Caller(schema)
    r1 = result(c.call("ask_model", {"question": "Yes or no?"}, caps={"sampling": {}}))
    req = r1["inputRequests"]["answer"]
    assert req["method"] == "sampling/createMessage"
    assert req["params"]["messages"][0]["content"]["text"] == "Yes or no?"
    sampled = {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m1"}
    out = c.call("ask_model", {"question": "Yes or no?"}, caps={"sampling": {}},
                 responses={"answer": sampled}, state=r1["requestState"])
    assert text(out) == "the model said: yes"


def test_list_my_roots_counts_the_roots(schema):
    c = Caller(schema)
    r1 = result(c.call("list_my_roots", caps={"roots": {}}))
    assert r1["inputRequests"] == {"roots": {"method": "roots/list"}}
    roots = {"roots": [{"uri": "file:///a"}, {"uri": "file:///b", "name": "b"}]}
    out = c.call("list_my_roots", caps={"roots": {}}, responses={"roots": roots}, state=r1["requestState"])
    assert text(out) == "you have 2 roots"


def test_busy_then_done_sends_only_request_state(schema):
    c = Caller(schema)
    r1 = result(c.call("busy_then_done", caps={}))
    assert r1["resultType"] == "input_required"
    assert "inputRequests" not in r1 and isinstance(r1["requestState"], str)
    assert text(c.call("busy_then_done", caps={}, state=r1["requestState"])) == "done"


def test_url_mode_elicitation(schema):
    c = Caller(schema)
    r1 = result(c.call("sign_in", caps={"elicitation": {"url": {}}}))
    assert r1["inputRequests"]["login"]["params"]["mode"] == "url"
    out = c.call("sign_in", caps={"elicitation": {"url": {}}}, responses={"login": {"action": "accept"}},
                 state=r1["requestState"])
    assert text(out) == "signed in"


# ------------------------------------------------------------------ prompts and resource templates


def test_prompt_with_input_required(schema):
    c = Caller(schema)
    r1 = result(c.send("prompts/get", "personal_greeting", caps=FORM))
    assert r1["resultType"] == "input_required"
    ok = c.send("prompts/get", "personal_greeting", caps=FORM, responses={"who": accept(name="Bo")}, state=r1["requestState"])
    assert text(ok) == "Write a warm greeting for Bo."
    no = c.send("prompts/get", "personal_greeting", caps=FORM, responses={"who": {"action": "decline"}}, state=r1["requestState"])
    assert error(no, -32602)["message"] == "personal_greeting needs a name"


def test_resource_template_with_input_required(schema):
    c = Caller(schema)
    uri = "vault://secrets/launch-codes"
    r1 = result(c.send("resources/read", uri, caps=FORM))
    assert r1["resultType"] == "input_required"
    assert r1["inputRequests"]["unlock"]["params"]["message"] == "Reveal the secret launch-codes?"
    ok = result(c.send("resources/read", uri, caps=FORM, responses={"unlock": accept(ok=True)}, state=r1["requestState"]))
    assert ok["contents"] == [{"uri": uri, "mimeType": "text/plain", "text": "the secret launch-codes is 42"}]
    assert "ttlMs" in ok and "cacheScope" in ok
    no = c.send("resources/read", uri, caps=FORM, responses={"unlock": accept(ok=False)}, state=r1["requestState"])
    assert "not granted" in error(no, -32602)["message"]


def test_static_resource_with_input_required(schema):
    yaml = """
mockmcp: 1
resources:
  - uri: file:///guarded.txt
    name: guarded
    replies:
      - when: {round: 1}
        steps:
          - inputRequired:
              inputRequests:
                ok: {method: elicitation/create, params: {message: Read it?, requestedSchema: {type: object, properties: {}}}}
      - when: {inputResponses: {ok: {action: accept}}}
        steps: [{text: "the guarded text"}]
      - steps: [{error: {code: -32602, message: refused}}]
"""
    c = Caller(schema, engine_for(yaml))
    r1 = result(c.send("resources/read", "file:///guarded.txt", caps=FORM))
    assert r1["resultType"] == "input_required"
    out = c.send("resources/read", "file:///guarded.txt", caps=FORM, responses={"ok": {"action": "accept"}}, state=r1["requestState"])
    assert text(out) == "the guarded text"


# ------------------------------------------------------------------ requestState integrity


def _confirm_state(c: Caller, action: str = "deploy") -> str:
    return result(c.call("confirm_action", {"action": action}))["requestState"]


def test_tampered_state_is_rejected(schema):
    c = Caller(schema)
    state = _confirm_state(c)
    body, mac = state.split(".")
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    err = error(c.call("confirm_action", {"action": "deploy"}, responses={"confirm": accept(confirm=True)},
                       state=f"{flipped}.{mac}"), -32602)
    assert "requestState rejected" in err["message"] and "integrity" in err["message"]


def test_a_mac_wrong_in_any_byte_is_rejected(schema):
    """The whole MAC is compared, not a prefix: flip each byte of the tag in turn (the body kept,
    the text re-encoded canonically so only the integrity check can refuse it)."""
    import base64

    c = Caller(schema)
    state = _confirm_state(c)
    body, mac = state.split(".")
    tag = base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))
    assert len(tag) > 1
    for i in range(len(tag)):
        bad = bytearray(tag)
        bad[i] ^= 0x01
        forged = base64.urlsafe_b64encode(bytes(bad)).rstrip(b"=").decode()
        err = error(c.call("confirm_action", {"action": "deploy"}, responses={"confirm": accept(confirm=True)},
                           state=f"{body}.{forged}"), -32602)
        assert "integrity" in err["message"], (i, err)
    # The untouched state still works: the refusals above were about the tag alone.
    assert "resultType" in result(c.call("confirm_action", {"action": "deploy"},
                                          responses={"confirm": accept(confirm=True)}, state=state))


def test_state_of_another_process_is_rejected(schema):
    state = _confirm_state(Caller(schema))
    other = Caller(schema)  # a fresh engine: another per-process random key
    err = error(other.call("confirm_action", {"action": "deploy"}, responses={"confirm": accept(confirm=True)},
                           state=state), -32602)
    assert "integrity" in err["message"]


@pytest.mark.parametrize("other", [
    ("confirm_action", {"action": "delete everything"}),  # same tool, other arguments
    ("two_rounds", None),  # another tool
])
def test_foreign_state_is_rejected(schema, other):
    c = Caller(schema)
    state = _confirm_state(c)
    name, args = other
    err = error(c.call(name, args, responses={"confirm": accept(confirm=True)}, state=state), -32602)
    assert "issued for a different request" in err["message"]
    assert "tools/call of 'confirm_action'" in err["message"]


def test_state_of_a_tool_is_rejected_by_a_prompt(schema):
    c = Caller(schema)
    state = _confirm_state(c)
    err = error(c.send("prompts/get", "personal_greeting", responses={"who": accept(name="x")}, state=state), -32602)
    assert "different request" in err["message"]


@pytest.mark.parametrize("bad", ["garbage", "a.b.c", "!!!.???", 42, {"x": 1}])
def test_malformed_state_is_rejected(schema, bad):
    c = Caller(schema)
    err = error(c.call("confirm_action", {"action": "deploy"}, state=bad), -32602)
    assert "requestState" in err["message"]


def test_state_key_makes_states_reproducible(schema):
    yaml = """
mockmcp: 1
protocol: {stateKey: test-key-1}
tools:
  - name: t
    replies:
      - when: {round: 1}
        steps: [{inputRequired: {requestState: true}}]
      - steps: [{text: "round {{ round }}"}]
"""
    a, b = Caller(schema, engine_for(yaml)), Caller(schema, engine_for(yaml))
    sa = result(a.call("t", {"x": 1}))["requestState"]
    sb = result(b.call("t", {"x": 1}))["requestState"]
    assert sa == sb
    assert text(b.call("t", {"x": 1}, state=sa)) == "round 2"  # a state from "another process" with the same key
    plain = yaml.replace("protocol: {stateKey: test-key-1}\n", "")
    assert result(Caller(schema, engine_for(plain)).call("t", {"x": 1}))["requestState"] != \
        result(Caller(schema, engine_for(plain)).call("t", {"x": 1}))["requestState"]


# ------------------------------------------------------------------ answers: missing, extra, wrong shape


def test_missing_answer_is_asked_again(schema):
    c = Caller(schema)
    r1 = result(c.call("confirm_action", {"action": "deploy"}))
    again = result(c.call("confirm_action", {"action": "deploy"}, responses={}, state=r1["requestState"]))
    assert again["resultType"] == "input_required"
    assert again["inputRequests"] == r1["inputRequests"]
    done = c.call("confirm_action", {"action": "deploy"}, responses={"confirm": accept(confirm=True)},
                  state=again["requestState"])
    assert text(done) == "done: deploy"


def test_partly_answered_round_asks_only_for_the_rest_and_keeps_the_answers(schema):
    c = Caller(schema)
    r1 = result(c.call("mixed_inputs"))
    assert set(r1["inputRequests"]) == {"form", "link", "model", "roots"}
    given = {"form": accept(n=7), "model": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}}
    again = result(c.call("mixed_inputs", responses=given, state=r1["requestState"]))
    assert again["resultType"] == "input_required"
    assert set(again["inputRequests"]) == {"link", "roots"}
    assert again["inputRequests"]["link"] == r1["inputRequests"]["link"]
    rest = {"link": {"action": "accept"}, "roots": {"roots": [{"uri": "file:///r"}]}}
    assert text(c.call("mixed_inputs", responses=rest, state=again["requestState"])) == "n=7 model=hi roots=1"


def test_extra_input_responses_are_ignored(schema):
    c = Caller(schema)
    state = _confirm_state(c)
    out = c.call("confirm_action", {"action": "deploy"}, state=state,
                 responses={"confirm": accept(confirm=True), "unasked": "not even an object", "x": {"action": "nope"}})
    assert text(out) == "done: deploy"


@pytest.mark.parametrize("value, why", [
    ("yes", "must be an object"),
    ({"action": "maybe"}, "'action'"),
    ({"action": "accept", "content": [1]}, "'content'"),
])
def test_wrong_shaped_elicitation_answer(schema, value, why):
    c = Caller(schema)
    err = error(c.call("confirm_action", {"action": "deploy"}, responses={"confirm": value}, state=_confirm_state(c)), -32602)
    assert "inputResponses['confirm']" in err["message"] and why in err["message"]


def test_wrong_shaped_sampling_and_roots_answers(schema):
    c = Caller(schema)
    st = result(c.call("ask_model"))["requestState"]
    err = error(c.call("ask_model", responses={"answer": {"role": "assistant", "content": {"type": "text", "text": "x"}}}, state=st), -32602)
    assert "'model'" in err["message"]
    st = result(c.call("list_my_roots"))["requestState"]
    err = error(c.call("list_my_roots", responses={"roots": {"roots": ["file:///a"]}}, state=st), -32602)
    assert "'roots'" in err["message"]


def test_input_responses_must_be_an_object(schema):
    c = Caller(schema)
    error(c.call("confirm_action", {"action": "deploy"}, responses=["x"], state=_confirm_state(c)), -32602)


# ------------------------------------------------------------------ capabilities (-32021)


@pytest.mark.parametrize("tool, caps, missing", [
    ("confirm_action", {}, {"elicitation": {"form": {}}}),
    ("confirm_action", {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    ("sign_in", {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}),
    ("sign_in", {"elicitation": {}}, {"elicitation": {"url": {}}}),
    ("ask_model", {"elicitation": {"form": {}}, "roots": {}}, {"sampling": {}}),
    ("list_my_roots", {"sampling": {}}, {"roots": {}}),
    ("mixed_inputs", {"sampling": {}}, {"elicitation": {"form": {}, "url": {}}, "roots": {}}),
    ("mixed_inputs", {"elicitation": {"form": {}}, "roots": {}}, {"elicitation": {"url": {}}, "sampling": {}}),
])
def test_missing_client_capability(schema, tool, caps, missing):
    c = Caller(schema)
    err = error(c.call(tool, {"action": "x"} if tool == "confirm_action" else None, caps=caps), -32021)
    assert err["data"]["requiredCapabilities"] == missing


def test_empty_elicitation_capability_means_form(schema):
    c = Caller(schema)
    assert result(c.call("confirm_action", {"action": "x"}, caps={"elicitation": {}}))["resultType"] == "input_required"


def test_capability_check_can_be_switched_off(schema):
    yaml = """
mockmcp: 1
protocol: {checkCapabilities: false}
tools:
  - name: t
    replies:
      - steps:
          - inputRequired:
              inputRequests:
                s: {method: sampling/createMessage, params: {messages: [], maxTokens: 1}}
"""
    c = Caller(schema, engine_for(yaml))
    r = result(c.call("t", caps={}))
    assert r["resultType"] == "input_required" and "s" in r["inputRequests"]


# ------------------------------------------------------------------ matching on round and answers


def test_rules_match_sampled_text_and_roots(schema):
    yaml = """
mockmcp: 1
tools:
  - name: t
    replies:
      - when: {round: 1}
        steps:
          - inputRequired:
              inputRequests:
                m: {method: sampling/createMessage, params: {messages: [], maxTokens: 5}}
                r: {method: roots/list}
      - when: {inputResponses: {m: {content: {text: {$regex: "^yes"}}}, r: {roots: {$contains: {uri: "file:///work"}}}}}
        steps: [{text: "model agreed, /work is a root"}]
      - when: {round: 2}
        steps: [{text: "round 2 without agreement"}]
      - steps: [{text: "round {{ round }}"}]
"""
    c = Caller(schema, engine_for(yaml))
    st = result(c.call("t"))["requestState"]

    def answer(said: str, roots: list[str]) -> str:
        responses = {"m": {"role": "assistant", "content": {"type": "text", "text": said}, "model": "x"},
                     "r": {"roots": [{"uri": u} for u in roots]}}
        return text(c.call("t", responses=responses, state=st))

    assert answer("yes please", ["file:///home", "file:///work"]) == "model agreed, /work is a root"
    assert answer("no", ["file:///work"]) == "round 2 without agreement"
    assert answer("yes", ["file:///home"]) == "round 2 without agreement"


def test_round_counts_without_state(schema):
    # Without a requestState the round is 2 as soon as inputResponses come back.
    yaml = """
mockmcp: 1
tools:
  - name: t
    replies:
      - when: {round: 1}
        steps:
          - inputRequired:
              requestState: false
              inputRequests:
                e: {method: elicitation/create, params: {message: hi, requestedSchema: {type: object, properties: {}}}}
      - steps: [{text: "round {{ round }}: {{ inputResponses.e.action }}"}]
"""
    c = Caller(schema, engine_for(yaml))
    r1 = result(c.call("t"))
    assert "requestState" not in r1
    assert text(c.call("t", responses={"e": {"action": "cancel"}})) == "round 2: cancel"


# ------------------------------------------------------------------ mockmcp check


def test_check_rejects_input_required_on_other_methods():
    yaml = """
mockmcp: 1
methods:
  - method: completion/complete
    replies:
      - steps: [{inputRequired: {requestState: true}}]
"""
    with pytest.raises(LoadError) as info:
        engine_for(yaml)
    assert "input_required is not allowed on completion/complete" in str(info.value)


def test_check_accepts_a_deliberate_raw_input_required(schema):
    yaml = """
mockmcp: 1
methods:
  - method: tools/list
    replies:
      - steps:
          - raw: {jsonrpc: "2.0", id: "{{ id }}", result: {resultType: input_required, requestState: x}}
          - hang: true
"""
    link = FakeLink(engine_for(yaml))
    out = link.send(request(5, "tools/list"))
    assert out == [{"jsonrpc": "2.0", "id": 5, "result": {"resultType": "input_required", "requestState": "x"}}]


def test_bundled_mrtr_scenario_checks_clean():
    _, warnings = load("mrtr", use_cache=False)
    assert warnings == []


def test_templates_use_request_and_answers_and_bad_values_are_invalid_params(schema):
    yaml = """
mockmcp: 1
tools:
  - name: calc
    replies:
      - when: {round: 1}
        steps:
          - inputRequired:
              inputRequests:
                n: {method: elicitation/create, params: {message: "Add what to {{ arguments.a }}?", requestedSchema: {type: object, properties: {n: {type: number}}}}}
      - steps:
          - result:
              content: [{type: text, text: "{{ arguments.a }} + {{ inputResponses.n.content.n }} = {{ add(arguments.a, inputResponses.n.content.n) }}"}]
              structuredContent: {sum: "{{ add(arguments.a, inputResponses.n.content.n) }}"}
"""
    c = Caller(schema, engine_for(yaml))
    r1 = result(c.call("calc", {"a": 2}))
    assert r1["inputRequests"]["n"]["params"]["message"] == "Add what to 2?"
    out = result(c.call("calc", {"a": 2}, responses={"n": accept(n=3)}, state=r1["requestState"]))
    assert out["content"][0]["text"] == "2 + 3 = 5" and out["structuredContent"] == {"sum": 5}
    # A value the template cannot use is the request's fault, not a crash.
    r1 = result(c.call("calc", {"a": "two"}))
    err = error(c.call("calc", {"a": "two"}, responses={"n": accept(n=3)}, state=r1["requestState"]), -32602)
    assert "add()" in err["message"]
    assert result(c.call("calc", {"a": 1}))["resultType"] == "input_required"  # still serving
