"""Client data can never crash the core: one regression test per defect found.

Each test drives the real path: lines through ``Connection.receive_data`` (or
the real process), scenarios through the loader and ``check``, ``requestState``
through the codec the engine uses.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from support.messages import META, line, request
from support.process import run_mock

from mockmcp.wire import jsonrpc
from mockmcp.scenario import matching
from mockmcp.wire import mrtr
from mockmcp.scenario import templates
from mockmcp.core.actions import Plan, Send
from mockmcp.core.connection import Connection
from mockmcp.scenario.loader import load, load_text
from mockmcp.scenario.problems import LoadError
from mockmcp.launch.boot import new_engine

CC = "io.modelcontextprotocol/clientCapabilities"


def connection(yaml_text: str | None = None) -> Connection:
    scenario = load("default", use_cache=False)[0] if yaml_text is None else load_text(yaml_text, "<test>")[0]
    return Connection(new_engine(scenario, seed=0, state_key=b"k"))


def answers(conn: Connection, data: bytes) -> list[dict[str, Any]]:
    """Every message the plans for ``data`` send, decoded."""
    out = []
    for plan in conn.receive_data(data):
        assert type(plan) is Plan
        for action in plan.all_actions():
            if type(action) is Send:
                out.append(json.loads(action.data))
    return out


def one(conn: Connection, data: bytes) -> dict[str, Any]:
    got = answers(conn, data)
    assert len(got) == 1, got
    return got[0]


def call(rid: Any, tool: str, arguments_json: str) -> bytes:
    """A tools/call line whose arguments are raw JSON text (so it can hold what json.dumps cannot write)."""
    return (
        '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s,"_meta":%s}}\n'
        % (json.dumps(rid), tool, arguments_json, json.dumps(META))
    ).encode()


# ---------------------------------------------------------------- 1. the scanner fast path


@pytest.mark.parametrize("text", [b'{"a":}', b'{"id":,}', b'{"a":+1}', b'{"a":.5}', b'{"a":0x10}', b'{"a":01}', b"{}}", b"{"])
def test_an_object_line_with_a_bad_value_is_a_parse_error(text: bytes) -> None:
    msg = one(connection(), text + b"\n")
    assert msg["error"]["code"] == -32700 and "id" not in msg


def test_a_bad_value_line_does_not_kill_the_process() -> None:
    proc = run_mock("run", "default", input=b'{"a":}\n' + line(request("after", "server/discover")), timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr[-2000:]
    first, after = (json.loads(x) for x in proc.stdout.splitlines())
    assert first["error"]["code"] == -32700
    assert after["id"] == "after" and "result" in after


# ---------------------------------------------------------------- 2. template arithmetic on client data


@pytest.mark.parametrize("a, b", [("1.5", "1" + "0" * 400), ("1" + "0" * 400, "0.5"), ("1e308", "1e308")])
def test_add_beyond_a_double_is_invalid_params(a: str, b: str) -> None:
    msg = one(connection(), call(7, "add", '{"a": %s, "b": %s}' % (a, b)))
    assert msg["id"] == 7 and msg["error"]["code"] == -32602 and "add()" in msg["error"]["message"]


HELPER_SCENARIO = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps: [{result: {content: [], structuredContent: {v: "{{ %s }}"}}}]
"""


@pytest.mark.parametrize("expr, args", [
    ("div(arguments.a, arguments.b)", {"a": 10**400, "b": 3}),  # int / int past a double
    ("div(arguments.a, arguments.b)", {"a": 1, "b": 0}),
    ("mul(arguments.a, arguments.b)", {"a": 10**4000, "b": 10**4000}),  # 8000 digits: cannot be written
    ("mul(arguments.a, arguments.b)", {"a": 1e300, "b": 1e300}),
    ("add(arguments.a, arguments.b)", {"a": 1.0, "b": 10**4000}),
    ("neg(arguments.a)", {"a": [1]}),
    ("number(arguments.a)", {"a": "1" * 5000}),
    ("number(arguments.a)", {"a": "1e999"}),
    ("number(arguments.a)", {"a": "nan"}),
    ("join(arguments.xs, arguments.sep)", {"xs": [0] * 3000, "sep": "x" * 3000}),  # 9 M characters
    ("concat(arguments.s, arguments.s, arguments.s)", {"s": "y" * 2_000_000}),
    ("join(arguments.xs)", {"xs": 5}),
    ("upper(arguments.s, arguments.s)", {"s": "a"}),  # the wrong number of arguments
])
def test_every_helper_turns_bad_client_values_into_invalid_params(expr: str, args: dict[str, Any]) -> None:
    conn = connection(HELPER_SCENARIO % expr)
    msg = one(conn, line(request(1, "tools/call", {"name": "t", "arguments": args})))
    assert msg["id"] == 1 and msg["error"]["code"] == -32602, msg
    assert len(msg["error"]["message"]) < 400  # never the client's megabytes echoed back


def test_a_template_key_is_always_text() -> None:
    conn = connection(HELPER_SCENARIO.replace('{v: "{{ %s }}"}', '{"{{ arguments.k }}": 1}'))
    msg = one(conn, line(request(1, "tools/call", {"name": "t", "arguments": {"k": [1, 2]}})))
    assert msg["result"]["structuredContent"] == {"[1,2]": 1}


def test_rendered_text_is_bounded() -> None:
    conn = connection(HELPER_SCENARIO.replace('{v: "{{ %s }}"}', '{v: "%s"}' % ("{{ arguments.s }}" * 5)))
    msg = one(conn, line(request(1, "tools/call", {"name": "t", "arguments": {"s": "z" * 1_000_000}})))
    assert msg["error"]["code"] == -32602 and str(templates.MAX_TEXT) in msg["error"]["message"]


def test_public_number_and_text_conversions() -> None:
    assert templates.to_number("12") == 12 and templates.to_number(" 2.5 ") == 2.5
    for bad in ("1_000", "0x10", "infinity", True, None, "١٢"):
        with pytest.raises(templates.TemplateError):
            templates.to_number(bad)
    assert [templates.to_text(v) for v in (None, True, 2.0, 2.5, {"a": [1]})] == ["", "true", "2", "2.5", '{"a":[1]}']


# ---------------------------------------------------------------- 3 and 10. nesting and numbers past the limits


def nested(depth: int) -> str:
    """``arguments.text`` nested so that the message is ``depth`` levels deep."""
    lists = depth - 3  # the message, params and arguments are three levels
    return '{"text": %s"x"%s}' % ("[" * lists, "]" * lists)


def test_nesting_up_to_the_limit_is_accepted_and_one_more_is_invalid_params() -> None:
    conn = connection()
    ok = one(conn, call(1, "echo", nested(jsonrpc.MAX_DEPTH)))
    assert "result" in ok
    deep = one(conn, call(2, "echo", nested(jsonrpc.MAX_DEPTH + 1)))
    assert deep["id"] == 2 and deep["error"]["code"] == -32602 and "nested deeper" in deep["error"]["message"]


@pytest.mark.parametrize("depth", [975, 981, 5_000, 200_000])
def test_deep_arguments_are_answered_with_the_id_and_the_process_lives(depth: int) -> None:
    conn = connection()
    msg = one(conn, call("deep", "echo", nested(depth)))
    assert msg["id"] == "deep" and msg["error"]["code"] == -32602
    assert "result" in one(conn, line(request("after", "server/discover")))


def test_deep_arguments_end_to_end_through_replies_and_state() -> None:
    """Once a line past the limit could be decoded, the encoders of the reply and of requestState broke."""
    lines = call(1, "echo", nested(978)) + call(2, "confirm_action", '{"action": %s}' % nested(978)[9:-1])
    lines += line(request("last", "server/discover"))
    proc = run_mock("run", "mrtr", input=lines, timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr[-3000:]
    msgs = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [m["id"] for m in msgs] == [1, 2, "last"]
    assert [m["error"]["code"] for m in msgs[:2]] == [-32602, -32602]


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    msg = one(connection(), call(1, "echo", json.dumps({"text": "[{" * 500})))
    assert msg["result"]["content"][0]["text"] == "[{" * 500


@pytest.mark.parametrize("value", ["1e400", "-1e999", "9" * 4301, "-" + "9" * 5000])
def test_numbers_past_the_limits_are_invalid_params_with_the_id(value: str) -> None:
    msg = one(connection(), call(42, "echo", '{"text": %s}' % value))
    assert msg["id"] == 42 and msg["error"]["code"] == -32602 and "out of range" in msg["error"]["message"]


def test_an_id_past_the_limits_is_invalid_request_without_id() -> None:
    msg = one(connection(), b'{"jsonrpc":"2.0","id":%s,"method":"ping"}\n' % (b"9" * 5000))
    assert msg["error"]["code"] == -32600 and "id" not in msg


def test_a_deep_line_that_is_not_json_is_still_a_parse_error() -> None:
    msg = one(connection(), call(1, "echo", '{"text": %s}' % ("[" * 100 + "]" * 99)))
    assert msg["error"]["code"] == -32700


# Bounds in this module are CPU seconds of this process (time.process_time): they are about
# what the work costs, and a machine busy with other work stretches the wall clock, not that.


def test_depth_is_measured_in_linear_time() -> None:
    conn = connection()
    start = time.process_time()
    one(conn, b"[" * 1_000_000 + b"]" * 1_000_000 + b"\n")
    one(conn, b'["' + b'\\"' * 1_000_000 + b"[" * 1000 + b"\n")  # escapes and an unterminated string
    assert time.process_time() - start < 5


def test_a_deep_value_never_closed_is_known_without_walking_its_brackets() -> None:
    """A line that opens more than ``MAX_DEPTH`` values it never closes is a parse error, told by
    counting its brackets: it costs a fraction of walking as many brackets that do close."""
    n = 1_000_000

    def cost(raw: bytes) -> tuple[float, dict[str, Any]]:
        start = time.process_time()
        msg = one(conn, raw + b"\n")
        return time.process_time() - start, msg

    conn = connection()
    walked, closed = cost(b"[" * n + b"]" * n)
    counted, unclosed = cost(b"[" * (2 * n))
    assert closed["error"]["code"] == -32600  # valid JSON past the limit; not a request
    assert unclosed["error"]["code"] == -32700 and "never closed" in unclosed["error"]["message"]
    assert counted < walked / 2, (counted, walked)


# ---------------------------------------------------------------- 8. templates in check: literals, nesting, scan time


def check_errors(yaml_text: str) -> str:
    with pytest.raises(LoadError) as info:
        load_text(yaml_text, "t.yaml")
    return str(info.value)


def text_tool(text: str) -> str:
    return "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps: [{text: %s}]\n" % json.dumps(text)


@pytest.mark.parametrize("expr, why", [
    ("1" * 5000, "more than 4300 digits"),
    ("1e999", "beyond a double"),
    ("neg(" * 2000 + "1" + ")" * 2000, "nested more than"),
    ("arguments.list[1.5]", "an index must be an integer"),
    ("arguments.list[" + "9" * 5000 + "]", "an index must be an integer"),
])
def test_check_reports_template_literals_and_nesting_past_the_limits(expr: str, why: str) -> None:
    message = check_errors(text_tool("{{ %s }}" % expr))
    assert "t.yaml:5:" in message and why in message and len(message) < 1000


def test_unknown_helper_suggests_the_closest() -> None:
    assert "unknown helper 'uper'; did you mean 'upper'?" in check_errors(text_tool("{{ uper(name) }}"))


@pytest.mark.parametrize("text", ["{{ a }}" * 20_000, "{{ a " * 20_000, "{{ {{ }}" * 20_000])
def test_template_scan_is_linear(text: str) -> None:
    start = time.process_time()
    try:
        templates.Template(text)
    except templates.TemplateError:
        pass
    assert time.process_time() - start < 1


# ---------------------------------------------------------------- 9. requestState: one text per state


def test_only_the_canonical_request_state_verifies() -> None:
    codec = mrtr.StateCodec(b"key")
    token = codec.issue("tools/call|t|0", 1, {"x": "elicitation/create"})
    assert codec.verify(token).round == 1
    body, mac = token.split(".")
    last = mac[-1]
    # 16 MAC bytes: 22 characters, the last carrying 4 unused bits, so +1 keeps the bytes.
    same_bytes = mac[:-1] + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".index(last) ^ 1]
    variants = [
        f"{body}.{same_bytes}",
        f"{body}.{mac}=",
        f"{body}.{mac}==",
        f" {token}",
        f"{body[:10]}\n{body[10:]}.{mac}",
        f"{body.replace('-', '+').replace('_', '/')}.{mac.replace('-', '+').replace('_', '/')}",
    ]
    for variant in variants:
        if variant == token:
            continue
        with pytest.raises(mrtr.StateError):
            codec.verify(variant)


def test_an_altered_request_state_is_invalid_params_over_the_core() -> None:
    conn = connection(load_mrtr_text())
    first = one(conn, line(request(1, "tools/call", {"name": "confirm_action", "arguments": {"action": "x"}},
                                   {CC: {"elicitation": {"form": {}}}})))
    state = first["result"]["requestState"]
    retry = one(conn, line(request(2, "tools/call", {
        "name": "confirm_action", "arguments": {"action": "x"}, "requestState": state + "=",
        "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": True}}}},
        {CC: {"elicitation": {"form": {}}}})))
    assert retry["id"] == 2 and retry["error"]["code"] == -32602 and "requestState" in retry["error"]["message"]


def load_mrtr_text() -> str:
    from support.paths import SCENARIOS

    return (SCENARIOS / "mrtr.yaml").read_text()


# ---------------------------------------------------------------- 13 and 6. matchers: operands and regex time


def when_tool(when: str) -> str:
    return "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - when: %s\n        steps: [{text: hit}]\n      - steps: [{text: miss}]\n" % when


@pytest.mark.parametrize("when, why", [
    ("{arguments: {a: {$regex: '['}}}", "is not a regular expression"),
    ("{arguments: {a: {$regex: 5}}}", "$regex takes a string"),
    ("{arguments: {a: {$anyOf: 5}}}", "$anyOf takes a non-empty list"),
    ("{arguments: {a: {$type: strin}}}", "did you mean 'string'?"),
    ("{arguments: {a: {$present: yes}}}", "$present takes true or false"),
    ("{arguments: {a: {$regx: b}}}", "unknown matcher '$regx'; did you mean '$regex'?"),
    ("{arguments: {a: {$anyOf: [1, {$regex: '('}]}}}", "is not a regular expression"),
    ("{params: {x: [{$contains: {$type: nope}}]}}", "$type must be one of"),
    ("{arguments: {a: {$regex: '^(a+)+$'}}}", "repeats a group"),
    ("{arguments: {a: {$regex: '(a|aa)*b'}}}", "repeats a group"),
    ("{arguments: {a: {$regex: '(x)\\1'}}}", "backreferences"),
    ("{arguments: {a: {$regex: 'a*a*a*a*b'}}}", "too many repetitions"),
])
def test_check_refuses_matchers_run_could_not_use(when: str, why: str) -> None:
    message = check_errors(when_tool(when))
    assert "t.yaml:5:" in message and why in message, message


def test_a_catastrophic_regex_cannot_block_the_server() -> None:
    """What check refuses could take 40 s; what it accepts answers a hostile string at once."""
    conn = connection(when_tool("{arguments: {a: {$regex: '^a*a*a*$'}}}"))
    start = time.process_time()
    for n in (29, 64, 700):  # 700: seconds of backtracking without the bound
        msg = one(conn, line(request(n, "tools/call", {"name": "t", "arguments": {"a": "a" * n + "!"}})))
        assert msg["result"]["content"][0]["text"] == "miss"
    assert time.process_time() - start < 2


def test_regex_input_bound_follows_the_pattern() -> None:
    conn = connection(when_tool("{arguments: {a: {$regex: '^x.*y$'}}}"))
    bound = matching._RegexShape("^x.*y$").max_input()
    hit = one(conn, line(request(1, "tools/call", {"name": "t", "arguments": {"a": "x" + "-" * (bound - 2) + "y"}})))
    over = one(conn, line(request(2, "tools/call", {"name": "t", "arguments": {"a": "x" + "-" * (bound - 1) + "y"}})))
    assert hit["result"]["content"][0]["text"] == "hit" and over["result"]["content"][0]["text"] == "miss"
    assert matching._RegexShape("error").max_input() >= 4 * 1024 * 1024  # a pattern without repetition: no bound


def test_common_patterns_stay_accepted() -> None:
    for pattern in ["^he", "^[A-Z]{2}-[0-9]{4}$", r"^\d{4}-\d{2}-\d{2}$", "^(yes|no)$", "(?:ab)+c", r"^[a-z]+@[a-z]+\.[a-z]+$", "(?i)hello.*world"]:
        assert matching.regex_problem(pattern) is None, pattern


# ---------------------------------------------------------------- 16. sampling capabilities


SAMPLING = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps:
          - inputRequired:
              inputRequests:
                s: {method: sampling/createMessage, params: {messages: [{role: user, content: {type: text, text: hi}}], maxTokens: 5, %s}}
"""


@pytest.mark.parametrize("extra, caps, missing", [
    ("tools: [{name: f, inputSchema: {type: object}}]", {"sampling": {}}, {"sampling": {"tools": {}}}),
    ("toolChoice: {mode: auto}", {"sampling": {"context": {}}}, {"sampling": {"tools": {}}}),
    ("includeContext: thisServer", {"sampling": {}}, {"sampling": {"context": {}}}),
    ("includeContext: allServers, tools: []", {}, {"sampling": {"tools": {}, "context": {}}}),
    ("includeContext: none", {}, {"sampling": {}}),
])
def test_sampling_features_need_their_capabilities(extra: str, caps: dict[str, Any], missing: dict[str, Any]) -> None:
    conn = connection(SAMPLING % extra)
    msg = one(conn, line(request(1, "tools/call", {"name": "t"}, {CC: caps})))
    assert msg["error"]["code"] == -32021 and msg["error"]["data"]["requiredCapabilities"] == missing
    for name in mrtr.describe_capabilities(missing):
        assert name in msg["error"]["message"]


@pytest.mark.parametrize("extra, caps", [
    ("tools: [{name: f, inputSchema: {type: object}}]", {"sampling": {"tools": {}}}),
    ("includeContext: thisServer", {"sampling": {"context": {}}}),
    ("includeContext: none", {"sampling": {}}),
])
def test_sampling_features_with_their_capabilities_are_asked(extra: str, caps: dict[str, Any]) -> None:
    msg = one(connection(SAMPLING % extra), line(request(1, "tools/call", {"name": "t"}, {CC: caps})))
    assert msg["result"]["resultType"] == "input_required"


def test_url_elicitation_has_no_elicitation_id() -> None:
    conn = connection(load_mrtr_text())
    for tool in ("sign_in", "mixed_inputs"):
        msg = one(conn, line(request(tool, "tools/call", {"name": tool},
                                     {CC: {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}})))
        for req in msg["result"]["inputRequests"].values():
            assert "elicitationId" not in req.get("params", {})
