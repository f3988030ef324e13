"""The control core (``mockmcp.core.control``) without sockets: control lines in, responses and effects out.

Each test drives a real ``Connection`` (the MCP side) and a ``Control`` over the
same engine, with the loader's real fragment checks, and reads what the MCP side
answers afterwards, so an operation is judged by its effect on the stream.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.messages import META, call, discover, line, listen, request
from support.controlcore import Rig

from mockmcp.scenario import fragments
from mockmcp.core.control import NOT_FOUND, TIMED_OUT, Control, Outcome, Pause, Resume, Shutdown
from mockmcp.wire.framing import Oversized


def sent(outcome: Outcome) -> list[dict[str, Any]]:
    return [json.loads(s.data) for s in outcome.sends]


def test_emit_reaches_only_the_streams_that_asked():
    rig = Rig()
    rig.mcp(listen(1, toolsListChanged=True))
    rig.mcp(listen(2, resourceSubscriptions=["file:///a"]))
    out = rig.ctl("emit", event="tools/list_changed")
    assert out.response is not None and out.response["result"] == {"delivered": 1}
    (note,) = sent(out)
    assert note["method"] == "notifications/tools/list_changed"
    assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
    out = rig.ctl("emit", event="resources/updated", uri="file:///a")
    assert [n["params"]["uri"] for n in sent(out)] == ["file:///a"]
    assert rig.ok("emit", event="resources/updated", uri="file:///other") == {"delivered": 0}


def test_emit_log_respects_each_streams_level():
    rig = Rig()
    rig.mcp(request(1, "subscriptions/listen", {"notifications": {}}, {"io.modelcontextprotocol/logLevel": "warning"}))
    rig.mcp(listen(2))  # no logLevel: no log messages
    assert rig.ok("emit", event="log", level="info", data="quiet") == {"delivered": 0}
    out = rig.ctl("emit", event="log", level="error", data={"x": 1}, logger="t")
    (note,) = sent(out)
    assert note["method"] == "notifications/message"
    assert note["params"] == {"_meta": {"io.modelcontextprotocol/subscriptionId": 1}, "level": "error", "data": {"x": 1}, "logger": "t"}


def test_bad_emits_are_errors_and_send_nothing():
    rig = Rig()
    rig.mcp(listen(1, toolsListChanged=True))
    err = rig.error("emit", event="tools/listchanged")
    assert err["code"] == -32602 and "did you mean 'tools/list_changed'" in err["message"]
    assert rig.error("emit", event="resources/updated")["message"] == "Invalid params: missing 'uri'"
    assert rig.ctl("emit", event="nope").sends == []


def test_add_replace_remove_a_tool_and_the_lists_follow():
    rig = Rig()
    rig.mcp(listen(1, toolsListChanged=True))
    out = rig.ctl("add", kind="tool", definition={"name": "wave", "replies": [{"steps": [{"text": "o/"}]}]})
    assert out.response is not None and out.response["result"]["delivered"] == 1
    assert sent(out)[0]["method"] == "notifications/tools/list_changed"
    (listed,) = rig.mcp(request(2, "tools/list"))
    assert [t["name"] for t in listed["result"]["tools"]] == ["greet", "wave"]
    assert rig.mcp(call(3, "wave"))[0]["result"]["content"] == [{"type": "text", "text": "o/"}]
    rig.ok("replace", kind="tool", definition={"name": "wave", "description": "new", "replies": [{"steps": [{"text": "\\o"}]}]}, notify=False)
    assert rig.mcp(call(4, "wave"))[0]["result"]["content"][0]["text"] == "\\o"
    out = rig.ctl("remove", kind="tool", key="wave", notify=False)
    assert out.sends == []
    assert rig.mcp(call(5, "wave"))[0]["error"]["message"] == "Unknown tool: wave"


def test_adding_to_a_scenario_without_tools_offers_the_capability():
    rig = Rig("mockmcp: 1\n")
    assert "tools" not in rig.mcp(discover(1))[0]["result"]["capabilities"]
    rig.ok("add", kind="tool", definition={"name": "t"})
    assert rig.mcp(discover(2))[0]["result"]["capabilities"]["tools"] == {"listChanged": True}
    rig.ok("remove", kind="tool", key="t")
    assert "tools" in rig.mcp(discover(3))[0]["result"]["capabilities"]  # never shrinks under a client


def test_prompt_resource_and_template_definitions():
    rig = Rig()
    rig.ok("add", kind="prompt", definition={"name": "p", "description": "a prompt"})
    assert rig.mcp(request(1, "prompts/get", {"name": "p"}))[0]["result"]["messages"][0]["content"]["text"] == "a prompt"
    rig.ok("add", kind="resource", definition={"uri": "file:///b", "name": "b", "text": "B"})
    assert rig.mcp(request(2, "resources/read", {"uri": "file:///b"}))[0]["result"]["contents"][0]["text"] == "B"
    rig.ok("add", kind="template", definition={"uriTemplate": "mem://{key}", "name": "m", "replies": [{"steps": [{"text": "{{ vars.key }}"}]}]})
    assert rig.mcp(request(3, "resources/read", {"uri": "mem://k1"}))[0]["result"]["contents"][0]["text"] == "k1"
    rig.ok("remove", kind="template", key="mem://{key}")
    assert rig.mcp(request(4, "resources/read", {"uri": "mem://k1"}))[0]["error"]["code"] == -32602


@pytest.mark.parametrize(
    ("kind", "definition", "path", "text"),
    [
        ("tool", {"name": "x", "inputSchema": {"type": "string"}}, "$.params.definition.inputSchema", "inputSchema must have type: object"),
        ("tool", {"name": "x", "replies": [{"steps": [{"txt": "hi"}]}]}, "$.params.definition.replies[0].steps[0]", "did you mean 'text'"),
        ("tool", {"name": "greet"}, "$.params.definition.name", "duplicate name 'greet'"),
        ("tool", {"nam": "x"}, "$.params.definition.nam", "unknown key 'nam'"),
        ("tool", {"name": "x", "replies": [{"steps": [{"setState": "nowhere"}, {"text": "x"}]}]}, "$.params.definition.replies[0].steps[0].setState", "unknown state 'nowhere'"),
        # ({?a} is RFC 6570 level 3, which is matched; a dotted name still cannot name a group)
        ("template", {"uriTemplate": "x://{a.b}", "name": "t"}, "$.params.definition.uriTemplate", "variable 'a.b'"),
        ("resource", {"uri": "file:///c", "name": "c", "file": "c.txt"}, "$.params.definition.file", "cannot reference a file"),
        ("prompt", ["not", "a", "mapping"], "$.params.definition", "expected a mapping"),
    ],
)
def test_invalid_definitions_are_located_like_in_a_scenario_file(kind, definition, path, text):
    rig = Rig()
    err = rig.error("add", kind=kind, definition=definition)
    assert err["code"] == -32602
    problems = [pr for pr in err["data"]["problems"] if pr["path"] == path]
    assert problems and text in problems[0]["message"], err
    assert err["message"].startswith(f"Invalid params: invalid {kind} definition: ")
    (listed,) = rig.mcp(request(1, "tools/list"))  # nothing changed, the MCP side answers as before
    assert [t["name"] for t in listed["result"]["tools"]] == ["greet"]


def test_operations_on_things_that_do_not_exist():
    rig = Rig()
    err = rig.error("remove", kind="tool", key="gret")
    assert err["code"] == NOT_FOUND and "did you mean 'greet'" in err["message"]
    assert rig.error("replace", kind="tool", definition={"name": "nope"})["code"] == NOT_FOUND
    assert rig.error("disarm", id=9)["code"] == NOT_FOUND
    assert rig.error("add", kind="widget", definition={})["code"] == -32602


def test_malformed_lines_and_unknown_operations():
    rig = Rig()
    out = rig.control.handle_line(b"{not json")
    assert out.response is not None and out.response["id"] is None and out.response["error"]["code"] == -32700
    out = rig.control.handle_line(b'{"jsonrpc":"2.0","method":"ping"}')
    assert out.response is not None and out.response["error"]["code"] == -32600
    err = rig.error("emitt")
    assert err["code"] == -32601 and "did you mean 'emit'" in err["message"]
    out = rig.control.handle_line(Oversized(10**9))
    assert out.response is not None and out.response["error"]["code"] == -32600
    out = rig.control.handle_line(b'{"jsonrpc":"2.0","id":"a","method":"ping","params":[1]}')
    assert out.response is not None and out.response["id"] == "a" and out.response["error"]["code"] == -32602


def test_state_get_and_set():
    rig = Rig()
    assert rig.ok("getState") == {"state": "start"}
    assert rig.ok("setState", state="ready") == {"state": "ready", "previous": "start"}
    assert rig.engine.session.state == "ready"
    err = rig.error("setState", state="redy")
    assert "did you mean 'ready'" in err["message"]


def test_armed_reply_wins_for_the_next_n_matching_calls_only():
    rig = Rig()
    armed = rig.ok("arm", when={"method": "tools/call", "name": "greet", "arguments": {"who": "bob"}}, steps=[{"error": {"code": -32000, "message": "down"}}], times=2)
    assert armed["remaining"] == 2
    assert rig.mcp(call(1, "greet", who="amy"))[0]["result"]["content"][0]["text"] == "hello amy"  # `when` does not match
    assert rig.mcp(call(2, "greet", who="bob"))[0]["error"] == {"code": -32000, "message": "down"}
    assert rig.mcp(call(3, "greet", who="bob"))[0]["error"]["message"] == "down"
    assert rig.mcp(call(4, "greet", who="bob"))[0]["result"]["content"][0]["text"] == "hello bob"
    counters = rig.ok("counters")
    assert counters["armed"] == [] and {"rule": f"armed#{armed['id']}", "matched": 2} in counters["rules"]
    assert counters["requests"] == 4


def test_arm_is_checked_like_a_rule_and_can_be_disarmed():
    rig = Rig()
    err = rig.error("arm", when={"method": "tools/call", "nth": 0}, steps=[{"text": "x"}])
    assert err["data"]["problems"][0]["path"] == "$.params.when.nth"
    err = rig.error("arm", when={"method": "tools/call"}, steps=[{"sleep": "1s"}])
    assert err["data"]["problems"][0]["path"] == "$.params.steps"  # a reply must end with a final step
    assert rig.error("arm", when={"name": "greet"}, steps=[{"text": "x"}])["message"] == "Invalid params: missing when.method"
    a = rig.ok("arm", when={"method": "tools/call"}, steps=[{"text": "armed"}], times=5)
    rig.ok("arm", when={"method": "tools/list"}, steps=[{"text": "x"}])
    assert rig.ok("disarm", id=a["id"]) == {"disarmed": 1}
    assert rig.ok("disarm") == {"disarmed": 1}
    assert rig.mcp(call(1, "greet", who="z"))[0]["result"]["content"][0]["text"] == "hello z"


def test_pause_resume_shutdown_are_effects_for_the_shell():
    rig = Rig()
    out = rig.ctl("pause")
    assert isinstance(out.effect, Pause) and out.effect.seconds is None
    assert isinstance(rig.ctl("resume").effect, Resume)
    out = rig.ctl("shutdown", mode="crash", status=3)
    assert isinstance(out.effect, Shutdown) and out.effect.crash and out.effect.status == 3
    out = rig.ctl("shutdown")
    assert isinstance(out.effect, Shutdown) and not out.effect.crash
    assert rig.error("shutdown", mode="crash", status=256)["code"] == -32602


def test_journal_since_a_position_pages_and_counts_what_was_dropped():
    rig = Rig()
    rig.control = Control(rig.engine, fragments, journal_records=4)
    rig.conn.observers[:] = [rig.control.inbound]
    for i in range(3):
        rig.mcp(discover(i))
    page = rig.ok("journal", since=0)
    assert [r["position"] for r in page["records"]] == [2, 3, 4, 5] and page["dropped"] == 2
    assert [r["dir"] for r in page["records"]] == ["in", "out", "in", "out"]
    page = rig.ok("journal", since=4, limit=1)
    assert [r["position"] for r in page["records"]] == [4] and page["next"] == 5
    assert page["records"][0]["message"]["method"] == "server/discover"
    assert rig.ok("journal", since=6)["records"] == []
    # a position before the first is no position: it answered "dropped": 7 for since=-7
    for op, params in (("journal", {}), ("waitFor", {"when": {"method": "tools/call"}, "timeout": 1})):
        err = rig.error(op, since=-7, **params)
        assert (err["code"], err["message"]) == (-32602, "Invalid params: 'since' must be 0 or more, got -7")


def test_a_missing_when_says_what_each_operation_needs():
    """waitFor takes ``when: {}`` (any request), so its error must not ask for a method as arm's does."""
    rig = Rig()
    assert rig.error("waitFor", timeout=1)["message"] == "Invalid params: 'when' must be an object ({} matches any request)"
    assert rig.error("arm", steps=[{"text": "x"}])["message"] == "Invalid params: 'when' must be an object (with at least 'method')"


def test_wait_for_is_woken_by_the_first_matching_request():
    rig = Rig()
    out = rig.ctl("waitFor", when={"method": "tools/call", "name": "greet", "arguments": {"who": "bob"}}, timeout=5)
    waiter = out.waiter
    assert out.response is None and waiter is not None
    woken = []
    waiter.on_done = lambda: woken.append(True)
    rig.mcp(call(1, "greet", who="amy"))
    assert not woken
    rig.mcp(call(2, "greet", who="bob"))
    assert woken == [True]
    response = rig.control.wait_response(waiter)
    assert response["result"]["message"]["id"] == 2 and response["result"]["position"] == 2


def test_wait_for_timeout_names_the_closest_request():
    rig = Rig()
    out = rig.ctl("waitFor", when={"method": "tools/call", "name": "greet", "arguments": {"who": "bob"}}, timeout=0.5)
    assert out.waiter is not None
    rig.mcp(discover(1))
    rig.mcp(call(2, "greet", who="amy"))
    err = rig.control.timed_out(out.waiter)["error"]
    assert err["code"] == TIMED_OUT
    miss = err["data"]["nearMiss"]
    assert miss["id"] == 2 and miss["reasons"] == ['argument \'who\' is "amy", rule wants "bob"']
    assert "#2 tools/call" in err["message"]


def test_wait_for_since_a_position_sees_earlier_requests():
    rig = Rig()
    rig.mcp(call(1, "greet", who="amy"))
    out = rig.ctl("waitFor", when={"method": "tools/call"}, timeout=1, since=0)
    assert out.response is not None and out.response["result"]["message"]["id"] == 1
    assert rig.error("waitFor", when={"method": "tools/call", "nth": 1}, timeout=1)["code"] == -32602
    assert rig.error("waitFor", when={"method": "tools/call"})["code"] == -32602  # no timeout
    err = rig.error("waitFor", when={"method": "tools/call", "arguments": {"x": {"$regx": "a"}}}, timeout=1)
    assert err["data"]["problems"][0]["path"] == "$.params.when.arguments.x['$regx']"


def test_mcp_requests_with_meta_still_checked_under_an_armed_reply():
    rig = Rig()
    rig.ok("arm", when={"method": "tools/call"}, steps=[{"text": "armed"}])
    bad = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet"}}
    assert rig.mcp(bad)[0]["error"]["code"] == -32602  # no _meta: the request's own mistake comes first
    assert rig.mcp(call(2, "greet", meta=dict(META)))[0]["result"]["content"][0]["text"] == "armed"


# ---------------------------------------------------------------- robustness

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "x", "greet", "{{ arguments.who }}", "tools/call", "1s"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "text", "steps", "replies", "error", "code", "when", "method", "arguments", "sleep",
                         "inputSchema", "type", "uri", "uriTemplate", "result", "hang", "exit", "status", "nth"]),
        inner, max_size=4),
    max_leaves=12,
)
_ops = st.sampled_from(["add", "replace", "remove", "arm", "waitFor", "emit", "setState", "journal", "disarm", "pause", "shutdown"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_ops, st.dictionaries(st.sampled_from(["kind", "definition", "key", "when", "steps", "times", "event", "uri", "state", "since", "timeout", "id", "mode", "status"]),
                                                 _json | st.sampled_from(["tool", "prompt", "resource", "template"]), max_size=5)), max_size=6))
def test_any_control_input_gets_an_answer_and_the_mcp_side_still_answers(ops):
    """Whatever a control client sends is answered (result or error), never raised; and whatever
    it managed to add or arm, the MCP side still answers every request (a check-approved
    definition never crashes the engine, as for a scenario file)."""
    rig = Rig()
    for op, params in ops:
        out = rig.ctl(op, **params)
        assert out.response is not None or out.waiter is not None
        if out.response is not None:
            assert ("result" in out.response) != ("error" in out.response)
    names = [t.name for t in rig.engine.scenario.tools] + ["greet", "x"]
    for i, name in enumerate(names):
        answers = rig.conn.receive_data(line(call(i, name, who="a")))
        assert len(answers) == 1  # a plan (its error or result), never an exception
    assert rig.mcp(discover("last"))[0]["result"]["resultType"] == "complete"


_lines = st.one_of(
    st.builds(lambda i, who: line(call(i, "greet", who=who)), st.integers(0, 10**6), st.text(max_size=8)),
    st.builds(lambda i: line(discover(i)), st.integers(0, 10**6)),
    st.just(line(call(7, "greet", who="\ud800 lone"))),
    st.just(('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"greet","arguments":{"who":"é☃"},"_meta":%s}}\n' % json.dumps(META)).encode()),
    st.builds(lambda v: line({"jsonrpc": "2.0", "method": "notifications/x", "params": {"v": v}}), _json),
    st.builds(lambda pad: b" \t" * pad + line(discover("padded")).rstrip(b"\n") + b" \r\n", st.integers(0, 2)),
    st.sampled_from([b"{not json\n", b"\xff\xfe\n", b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e400}}\n',
                     b"[1,2]\n", ('{"s":"\\ud800 \u00e9 \u2603"}\n').encode()]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_lines, max_size=12), st.integers(0, 14), st.integers(1, 20))
def test_the_spliced_journal_says_what_decoding_each_record_would(lines, since, limit):
    """``journal`` splices each kept line's JSON text into its answer instead of decoding and
    encoding it again (the second path); its answer must parse to exactly the records that
    decoding every line read and written gives (the plain path, built here from what the test
    itself fed and saw written)."""
    rig = Rig()
    expected: list[dict[str, Any]] = []
    for data in lines:
        rig.conn.receive_data(data)  # the inbound observer records it
        try:
            message = json.loads(data)
        except ValueError:
            message = None
        ok = type(message) is dict and "jsonrpc" in message and (not isinstance(message.get("params"), dict) or message["params"].get("n") is None)
        expected.append({"dir": "in", **({"message": message} if ok else {})})
    page = rig.ok("journal", since=since, limit=limit)
    want = [dict(r, position=i) for i, r in enumerate(expected)][since : since + limit]
    assert [r["position"] for r in page["records"]] == [r["position"] for r in want]
    for got, exp in zip(page["records"], want):
        assert got["dir"] == "in"
        if "message" in exp:
            assert got["message"] == exp["message"]
        else:
            assert "message" not in got and ("raw" in got or "oversized" in got)
    # and what the shell writes, spliced the same way
    out = [json.loads(s.data) for p in rig.conn.receive_data(line(discover("w"))) for s in p.actions]
    for s in out:
        rig.control.outbound(jsonrpc_encode(s))
    tail = rig.ok("journal", since=len(lines) + 1)["records"]
    assert [r["message"] for r in tail] == out and all(r["dir"] == "out" for r in tail)


def jsonrpc_encode(msg: dict[str, Any]) -> bytes:
    from mockmcp.wire import jsonrpc

    return jsonrpc.encode(msg)


def test_a_journal_page_is_bounded_in_bytes_too(monkeypatch):
    from mockmcp.core.control import journal

    monkeypatch.setattr(journal, "MAX_JOURNAL_CHARS", 2_000)
    rig = Rig()
    for i in range(20):
        rig.mcp(call(i, "greet", who="x" * 300))
    page = rig.ok("journal", since=0, limit=1_000)
    assert 1 <= len(page["records"]) < 40 and page["next"] == page["records"][-1]["position"] + 1
    rest = rig.ok("journal", since=page["next"], limit=1_000)
    assert rest["records"][0]["position"] == page["next"]  # nothing skipped: the rest is on the next page
