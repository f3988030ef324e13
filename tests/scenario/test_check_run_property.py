"""Property: a scenario ``mockmcp check`` accepts never crashes ``mockmcp run``.

Hypothesis builds scenario mappings from the model's step kinds, rules, ``when``
conditions, templates, loops and edge values (huge integers, extreme floats,
deep nesting, odd URI templates), dumps them to YAML text and loads them as
``check`` does. Each one accepted is served by the real trio shell on memory
streams (trio's autojump clock makes scripted sleeps free) and gets a few
requests for each tool, prompt, resource and template: no exception may escape,
and every request is answered, or legitimately pending (the scenario can hang,
stop reading, close stdout or exit).
"""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing
import yaml
from support.messages import request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.shellharness import Harness

from mockmcp.core.engine import Engine
from mockmcp.launch.boot import new_engine
from mockmcp.scenario.loader import load_text
from mockmcp.scenario.problems import LoadError

# ---------------------------------------------------------------- values

def mostly(usual: st.SearchStrategy[Any], edge: st.SearchStrategy[Any], odds: int = 15) -> st.SearchStrategy[Any]:
    """``edge`` once in ``odds`` draws: a scenario holds dozens of values and one edge
    value often makes ``check`` refuse it, while only accepted scenarios are run."""
    return st.sampled_from([False] * (odds - 1) + [True]).flatmap(lambda is_edge: edge if is_edge else usual)


# Literals Python cannot hold or dump go in as placeholders, replaced in the YAML text.
LITERALS = {"XINT4301X": "9" * 4301, "XINT5000X": "-" + "9" * 5000, "XHEXX": "0x" + "f" * 4000, "XE999X": "1e999"}
edge_ints = st.sampled_from([0, -1, 2**31, 2**63, -(2**64), 10**300, int("9" * 4300), "XINT4301X", "XINT5000X", "XHEXX"])
edge_floats = st.sampled_from([0.5, -0.0, 1e308, -1e308, 5e-324, 1.7976931348623157e308, float("inf"), "XE999X"])
scalars = mostly(
    st.one_of(
        st.none(), st.booleans(), st.integers(-1000, 1000), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
        st.sampled_from(["{{ arguments.a }}", "{{ id }}", "{{ add(arguments.a, 1) }}", "{{ index }}", "x{{ arguments }}y"]),
    ),
    edge_ints | edge_floats,
)


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


json_values = mostly(
    st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "text"]), inner, max_size=3), max_leaves=6),
    st.sampled_from([20, 80, 101, 400]).map(nested),
)
durations = mostly(st.sampled_from(["0ms", "5ms", "1.5s", "2m"]), st.just("9" * 400 + "s"))
counts = mostly(st.integers(-2, 4) | st.just("{{ default(arguments.n, 2) }}"), st.sampled_from([300, 100_001, 10**12]))

# ---------------------------------------------------------------- steps

# a templated sleep renders request values: "-1ms", "xms", "1e9ms" must be refused, not crash
templated_durations = st.sampled_from(["{{ arguments.a }}ms", "{{ arguments.n }}s", "{{ default(arguments.a, 5) }}ms", "{{ arguments }}"])
sleep = st.builds(lambda d: {"sleep": d}, durations | templated_durations)
progress = st.builds(lambda v, t: {"progress": {"progress": v, "total": t}}, st.one_of(st.integers(0, 5), edge_floats, st.just("{{ index }}")), st.none() | st.just(10))
log = st.builds(lambda lv, d: {"log": {"level": lv, "data": d}}, st.sampled_from(["debug", "info", "error"]), json_values)
emit = st.sampled_from([{"emit": {"event": "tools/list_changed"}}, {"emit": {"event": "resources/updated", "uri": "file:///r"}}])
stderr = st.builds(lambda r: {"stderr": "noise", "repeat": r}, st.integers(-1, 3))
dribble = st.builds(lambda c: {"dribble": {"chunkBytes": c, "pause": "1ms"}}, st.integers(-1, 50))
raw = st.builds(lambda v: {"raw": v}, json_values)
raw_bytes = st.sampled_from([{"rawBytes": "\\x00garbage\n"}, {"rawBytes": "{{ arguments.a }}\n"}, {"rawBytes": "€"}])
other = st.sampled_from([{"stopReading": "5ms"}, {"setState": "start"}])
# a request to the client (legacy era; check refuses it in a modern scenario): nobody answers in
# this harness, so each one times out (virtual seconds) and the reply goes on
ask = st.builds(
    lambda m, t: {"request": {"method": m, "params": {"message": "{{ arguments.a }}", "requestedSchema": {"type": "object"}, "messages": [], "maxTokens": 1}, "name": "r", "timeout": t}},
    st.sampled_from(["ping", "roots/list", "elicitation/create", "sampling/createMessage"]), st.sampled_from(["1ms", "2s"]),
)
simple = st.one_of(sleep, progress, log, emit, stderr, dribble, raw, raw_bytes, other, ask)
loop = st.builds(lambda n, body: {"loop": {"times": n, "steps": body}}, counts, st.lists(simple, min_size=0, max_size=2))
nested_loop = st.builds(lambda n, body: {"loop": {"times": n, "steps": body}}, counts, st.lists(loop | simple, min_size=1, max_size=2))

text = st.builds(lambda t: {"text": t}, st.sampled_from([
    "hi", "{{ arguments.a }}", "{{ arguments }}", "{{ length(arguments.a) }}", "{{ div(1, arguments.a) }}", "{{ json(arguments) }}",
    "{{ mul(arguments.a, 10) }}", "{{ uuid() }}", "{{ counter(arguments.a) }}", "{{ now(arguments.a) }}", "{{ base64(arguments) }}",
    "{{ default(responses.r.result, responses.r) }}",
]))
result = st.builds(lambda v: {"result": {"content": [{"type": "text", "text": "r"}], "structuredContent": v}}, json_values)
error = st.builds(lambda c, d: {"error": {"code": c, "message": "no", "data": d}}, st.one_of(st.integers(-33000, 1), edge_ints), json_values)
huge = st.builds(lambda b, c: {"huge": {"bytes": b, "char": c}}, mostly(st.integers(-1, 5000), st.sampled_from([10**12, 64 * 1024 * 1024 + 1])), mostly(st.sampled_from(["x", "é", "ab"]), st.just("")))
exit_ = st.builds(lambda s: {"exit": {"status": s}}, mostly(st.sampled_from([0, 1, 255]), st.sampled_from([256, -1, 2**40])))
ask = {"k": {"method": "elicitation/create", "params": {"message": "{{ arguments.a }}?", "requestedSchema": {"type": "object"}}}}
phase = st.one_of(
    st.builds(lambda n: {"polls": n}, mostly(st.integers(1, 3), st.sampled_from([0, -1, 10**12]))),
    st.builds(lambda d: {"after": d}, durations),
    st.just({"state": "start"}),
    st.just({"status": "input_required", "inputRequests": ask}),
    st.just({"statusMessage": "{{ arguments.a }}"}),
    st.just({"polls": 1, "after": "5ms"}),
)
task = st.builds(
    lambda phases, outcome, ttl, extra: {"task": {"phases": phases, "outcome": outcome, "ttlMs": ttl, **extra}},
    st.lists(phase, max_size=3),
    st.one_of(st.just([]), text.map(lambda t: [t]), error.map(lambda e: [e]), st.just([{"hang": True}])),
    mostly(st.sampled_from([None, 1000, 3_600_000]), st.sampled_from([0, -1, 10**12])),
    st.sampled_from([{}, {"withoutCapability": "answer"}, {"cancel": "ignore"}, {"faults": {"statusBackwards": True, "vanishAfterPolls": 2}},
                     {"faults": {"hangGetAfterPolls": 1}}, {"faults": {"reuseInputKey": True, "terminalChanges": True, "anyMethod": True}}]),
)
final = st.one_of(text, text, result, error, huge, st.just({"hang": True}), exit_, task, task)
steps = st.builds(lambda lead, last: lead + [last], st.lists(simple | nested_loop, max_size=3), final)

# ---------------------------------------------------------------- rules and primitives

when = st.one_of(
    st.just({}),
    st.builds(lambda v: {"arguments": {"a": v}}, scalars),
    st.sampled_from([{"nth": 2}, {"every": 2}, {"first": 1}, {"after": 1}, {"probability": 0.5}, {"round": 1}, {"arguments": {"a": {"$present": True}}}]),
)
rule = st.builds(lambda w, s: {"when": w, "steps": s}, when, steps)
sequence_rule = st.builds(lambda seq, cycle: {"sequence": seq, "cycle": cycle}, st.lists(steps, min_size=1, max_size=2), st.booleans())
rules = st.lists(rule | sequence_rule, min_size=1, max_size=3)
uri_templates = mostly(
    st.sampled_from(["t://{x}", "t://{+rest}", "t://{a}/{b}", "t://{#f}", "t://{x"]),
    st.sampled_from(["t://{a.b}", "t://{1}", "t://{a}/{a}", "t://{?q}", "t://{}"]),
    odds=3,
)


# inputSchemas (validated by default): some the validator refuses (check must then refuse the scenario)
input_schemas = st.sampled_from([
    None,
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}},
    {"type": "object", "required": ["a"], "additionalProperties": False, "properties": {"a": {}, "n": {"type": "number"}}},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"anyOf": [{"type": "string", "pattern": "^x"}, {"$ref": "#/$defs/x"}]}}},
    {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
    {"type": "object", "properties": {"a": {"pattern": "(a+)+$"}}},
    {"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"},
    {"type": "object", "unevaluatedProperties": {"type": "integer"}, "properties": {"n": {"multipleOf": 0.1}}},
])


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    tools = [{"name": f"t{i}", "replies": draw(rules)} for i in range(draw(st.integers(1, 2)))]
    for tool in tools:
        schema = draw(input_schemas)
        if schema is not None:
            tool["inputSchema"] = schema
    scenario: dict[str, Any] = {"mockmcp": 1, "tools": tools}
    if draw(st.booleans()):
        scenario["protocol"] = {"era": draw(st.sampled_from(["legacy", "dual"]))}
    if draw(st.booleans()):
        scenario["prompts"] = [{"name": "p", "replies": draw(rules)}]
    if draw(st.booleans()):
        scenario["resources"] = [{"uri": "file:///r", "name": "r", "text": "hello", "replies": draw(st.just([]) | rules)}]
    if draw(st.booleans()):
        scenario["resourceTemplates"] = [{"uriTemplate": draw(uri_templates), "name": "tm", "replies": draw(rules)}]
    if draw(st.booleans()):
        scenario.setdefault("protocol", {})
        scenario["protocol"]["exitAfter"] = {"messages": draw(st.integers(1, 5)), "status": draw(mostly(st.just(1), st.just(300)))}
    return scenario


# ---------------------------------------------------------------- serving

MAY_GO_QUIET = ("hang", "stopReading", "exit", "exitAfter", "closeStdout", "hangGetAfterPolls")
TASKS = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


def requests_for(s: dict[str, Any], task_ids: list[str] = []) -> list[dict[str, Any]]:
    out: list[tuple[str, dict[str, Any]]] = []
    legacy = s.get("protocol", {}).get("era") in ("legacy", "dual")
    if legacy:
        caps = {"sampling": {}, "roots": {}, "elicitation": {}}
        out.append(("initialize", {"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "p", "version": "1"}}))
    for tool in s["tools"]:
        for args in ({}, {"a": 1}, {"a": "x", "n": 3}):
            out.append(("tools/call", {"name": tool["name"], "arguments": args}))
    tasks = []  # the tasks made by the calls above (their ids are known: the engine's key is fixed)
    for tid in task_ids:
        tasks += [("tasks/get", {"taskId": tid}), ("tasks/update", {"taskId": tid, "inputResponses": {"k": {"action": "accept"}}}),
                  ("tasks/get", {"taskId": tid}), ("tasks/cancel", {"taskId": tid}), ("tasks/get", {"taskId": tid})]
    if task_ids:
        tasks += [("tasks/get", {"taskId": 7}), ("subscriptions/listen", {"notifications": {"taskIds": task_ids[:2]}})]
    if "prompts" in s:
        out += [("prompts/get", {"name": "p", "arguments": {}}), ("prompts/get", {"name": "p", "arguments": {"a": "1"}})]
    if "resources" in s:
        out.append(("resources/read", {"uri": "file:///r"}))
    if "resourceTemplates" in s:
        out += [("resources/read", {"uri": "t://x"}), ("resources/read", {"uri": "t://a/b"}), ("resources/templates/list", {})]
    out += [("tools/list", {}), ("ping", {})]
    msgs = [request(i + 1, method, params, TASKS if task_ids else None) for i, (method, params) in enumerate(out)]
    if legacy:
        for m in msgs:  # a handshake-era client sends no per-request _meta (a dual scenario then serves it the legacy way)
            m["params"].pop("_meta", None)
    return msgs + [request(len(out) + i + 1, method, params, TASKS) for i, (method, params) in enumerate(tasks)]


async def serve(engine: Engine, messages: list[dict[str, Any]]) -> tuple[set[Any], Harness]:
    """Send every request; the ids answered by the time nothing more can happen.

    The harness's shell, with a reader of our own: ``raw``/``rawBytes`` steps write
    lines that are not JSON on purpose, and those are skipped here."""
    harness = Harness(engine)
    answered: set[Any] = set()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness.shell.serve)
        await harness.send(*messages)
        buffer = b""
        with trio.move_on_after(10_000):  # virtual seconds: every scripted sleep fits
            while len(answered) < len(messages):
                chunk = await harness.stdout_recv.receive_some()
                if not chunk:
                    break  # stdout closed (closeStdout, exit): what is left is legitimately pending
                *lines, buffer = (buffer + chunk).split(b"\n")
                for raw in lines:
                    msg = _json(raw)
                    if type(msg) is dict and "id" in msg and "method" not in msg:
                        answered.add(json.dumps(msg["id"]))
        nursery.cancel_scope.cancel()
    return {json.loads(i) for i in answered}, harness


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None  # a scripted non-JSON line


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_a_scenario_check_accepts_is_served_without_a_crash(data):
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10**9)
    for placeholder, literal in LITERALS.items():
        text = text.replace(placeholder, literal)
    try:
        scenario, _ = load_text(text, "generated.yaml")
    except LoadError:
        return  # check refused it, with located problems: nothing to run
    probe = new_engine(scenario, state_key=b"k")
    task_ids = [probe.tasks.new_id() for _ in range(6 * len(data["tools"]))] if probe.tasks.specs else []
    messages = requests_for(data, task_ids)
    engine = new_engine(scenario, state_key=b"k", clock=trio.current_time)
    answered, harness = trio.run(serve, engine, messages, clock=trio.testing.MockClock(autojump_threshold=0))
    assert "Traceback" not in harness.stderr_text()
    if not any(key in text for key in MAY_GO_QUIET):
        # a listen stream stays open (its id is answered by notifications, not a response)
        expected = {m["id"] for m in messages if m["method"] != "subscriptions/listen"}
        assert expected <= answered, json.dumps(data)[:2000]
