"""Unit tests of the pure core modules, built from model objects (no YAML, no loader, no shell).

Each module is driven through its own interface: ``Session`` (in-flight ids,
the subscription index, rule counters), ``Selector`` (targeting, sequences,
the near miss), ``Envelope`` (what every result carries), ``RequestContext``
(the template scope kept in step), ``StepExpander`` (one case per step class,
the lazy rest and its budget) and ``errors.error_response``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario.model import base as model
from mockmcp.wire import mrtr
from mockmcp.wire import protocol as p
from mockmcp.core.actions import Ask, CloseStdout, Dribble, Emit, Exit, Forward, HttpFault, Park, Send, Sleep, Stderr, StopReading, WriteRaw
from mockmcp.core.context import RequestContext
from mockmcp.core.envelope import Envelope
from mockmcp.core.replies import ReplyCache
from mockmcp.core.rounds import Rounds
from mockmcp.core.selection import Selector
from mockmcp.core.session import Session, Subscription
from mockmcp.core.steps import EAGER_BUDGET, PART_OF_KEY, Mode, StepExpander
from mockmcp.scenario.model.faults import CloseStdoutStep, DribbleSpec, DribbleStep, EndSubscriptionSpec, EndSubscriptionStep, ExitSpec, ExitStep, ForwardStep, HangStep, HttpSpec, HttpStep, HugeSpec, HugeStep, RawBytesStep, RawStep, RequestSpec, RequestStep, SetStateStep, StderrStep, StopReadingStep
from mockmcp.scenario.model.notify import EmitSpec, EmitStep, LogSpec, LogStep, LoopSpec, LoopStep, ProgressSpec, ProgressStep, RandomDelay
from mockmcp.scenario.model.options import CacheHints
from mockmcp.scenario.model.rounds import InputRequiredSpec, InputRequiredStep
from mockmcp.scenario.model.catalog import STEP_TYPES, Step
from mockmcp.scenario.model.tasks import TaskSpec, TaskStep

SERVER_INFO = {"name": "units", "version": "9"}


class FixedRandom:
    """A random generator that returns what it is told (``random()`` in turn, ``uniform`` its midpoint)."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)

    def uniform(self, a: float, b: float) -> float:
        return (a + b) / 2


def scenario(**kw: Any) -> model.Scenario:
    return model.Scenario(mockmcp=1, server=model.Server(name=SERVER_INFO["name"], version=SERVER_INFO["version"]), **kw)


def context(rid: Any = 1, method: str = "tools/call", state: str = "start", meta: dict[str, Any] | None = None,
            **params: Any) -> RequestContext:
    message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return RequestContext(jsonrpc.Request(rid, method, params, message), meta or {}, state)


def rule(*steps: Step, name: str | None = None, **when: Any) -> model.Rule:
    return model.Rule(when=model.Match(**when), steps=list(steps), name=name)


def text(value: str) -> model.TextStep:
    return model.TextStep(text=value)


# ---------------------------------------------------------------- Session


def test_session_begin_and_finished_track_the_ids_in_flight() -> None:
    session = Session("start")
    session.begin(1, "tools/call")
    session.begin("a", "subscriptions/listen")
    assert session.in_flight == {1: "tools/call", "a": "subscriptions/listen"}
    session.finished(1)
    session.finished(99)  # an id never seen: nothing to do
    assert session.in_flight == {"a": "subscriptions/listen"}


def test_session_listeners_index_streams_by_event_and_resource_uri() -> None:
    session = Session("start")
    session.subscribe(Subscription("s1", {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}))
    session.subscribe(Subscription("s2", {"toolsListChanged": True, "promptsListChanged": False,
                                          "resourceSubscriptions": ["file:///a", "file:///b"]}))
    assert session.listeners("tools/list_changed", None) == ["s1", "s2"]  # in the order they opened
    assert session.listeners("tools/list_changed", "ignored://uri") == ["s1", "s2"]  # a uri only matters for updates
    assert session.listeners("prompts/list_changed", None) == []  # asked for with false
    assert session.listeners("resources/updated", "file:///a") == ["s1", "s2"]
    assert session.listeners("resources/updated", "file:///b") == ["s2"]
    assert session.listeners("resources/updated", "file:///c") == []
    assert session.listeners("resources/updated", None) == []
    assert session.listeners("tools/list_changed", None, only="s2", has_only=True) == ["s2"]
    assert session.listeners("resources/updated", "file:///b", only="s1", has_only=True) == []


def test_session_a_finished_stream_leaves_the_index() -> None:
    session = Session("start")
    session.begin("s1", "subscriptions/listen")
    session.subscribe(Subscription("s1", {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}))
    session.subscribe(Subscription("s2", {"toolsListChanged": True}))
    session.finished("s1")
    assert list(session.subscriptions) == ["s2"] and "s1" not in session.in_flight
    assert session.listeners("tools/list_changed", None) == ["s2"]
    assert session.listeners("resources/updated", "file:///a") == []


def test_session_counts_matches_and_sequence_use_per_rule() -> None:
    session = Session("start")
    a, b = rule(text("a")), rule(text("a"))  # equal rules are still two rules
    assert [session.count_match(a) for _ in range(3)] == [1, 2, 3]
    assert session.count_match(b) == 1
    assert [session.take_sequence(a) for _ in range(3)] == [0, 1, 2]
    assert session.take_sequence(b) == 0
    session.set_state("open")
    assert session.state == "open"


# ---------------------------------------------------------------- Selector


def pattern(when: dict[str, Any], n: int = 10, rng: FixedRandom | None = None) -> str:
    """'T' for each request the targeted rule answered, '.' for the fallback."""
    selector = Selector(Session("start"), rng or FixedRandom())
    rules = [rule(text("targeted"), **when), rule(text("fallback"))]
    out = ""
    for i in range(n):
        chosen = selector.select(rules, context(i))
        assert chosen is not None
        out += "T" if chosen.rule is rules[0] else "."
    return out


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ({"nth": 3}, "..T......."),
        ({"every": 3}, "..T..T..T."),
        ({"first": 2}, "TT........"),
        ({"after": 7}, ".......TTT"),
        ({"after": 2, "every": 2}, "...T.T.T.T"),
    ],
)
def test_selector_targeting(when: dict[str, Any], expected: str) -> None:
    assert pattern(when) == expected


def test_selector_probability_draws_once_per_matching_request() -> None:
    rng = FixedRandom(0.1, 0.7, 0.49, 0.5, 0.0)
    assert pattern({"probability": 0.5}, 5, rng) == "T.T.T"  # taken when the draw is below it
    assert rng.values == []


def test_selector_counts_only_requests_that_match_the_rest_of_when() -> None:
    selector = Selector(Session("start"), FixedRandom())
    rules = [rule(text("second x=1"), arguments={"x": 1}, nth=2), rule(text("other"))]
    got = [selector.select(rules, context(i, name="t", arguments={"x": x})) for i, x in enumerate([2, 1, 2, 1, 1])]
    assert [c is not None and c.rule is rules[0] for c in got] == [False, False, False, True, False]


def test_selector_sequence_stops_at_the_last_entry_or_cycles() -> None:
    entries: list[list[Step]] = [[text("a")], [text("b")], [text("c")]]
    for cycle, expected in [(False, "abccc"), (True, "abcab")]:
        selector = Selector(Session("start"), FixedRandom())
        rules = [model.Rule(sequence=entries, cycle=cycle)]
        picked = [selector.select(rules, context(i)) for i in range(5)]
        assert "".join(c.steps[0].text for c in picked if c is not None) == expected  # type: ignore[union-attr]


def test_selector_require_raises_no_rule_matched_with_the_near_miss() -> None:
    session = Session("start")
    selector = Selector(session, FixedRandom())
    rules = [rule(text("l"), name="london", arguments={"city": "London", "units": "metric"}),
             rule(text("p"), name="paris", arguments={"city": "Paris", "units": "metric"})]
    with pytest.raises(errors.NoRuleMatched) as info:
        selector.require(rules, context(5, name="w", arguments={"city": "Paris", "units": "imperial"}), "tool 'w'")
    exc = info.value
    assert exc.code == p.INTERNAL_ERROR and exc.request_id == 5
    assert exc.near_miss is not None and exc.near_miss["rule"] == "paris"  # one part off; london is two
    assert "units" in exc.near_miss["reason"]
    assert exc.response()["error"]["data"] == {"nearMiss": exc.near_miss}
    assert session.unmatched == [{"id": 5, "method": "tools/call", "what": "tool 'w'", "nearMiss": exc.near_miss}]


def test_selector_near_miss_of_a_rule_skipped_by_its_targeting() -> None:
    selector = Selector(Session("start"), FixedRandom())
    with pytest.raises(errors.NoRuleMatched) as info:
        selector.require([rule(text("x"), nth=2)], context(1), "tool 't'")
    miss = info.value.near_miss
    assert miss is not None and miss["rule"] == "replies[0]" and "targeting" in miss["reason"]


# ---------------------------------------------------------------- Envelope


def test_envelope_complete_adds_result_type_server_info_and_cache_hints() -> None:
    env = Envelope(scenario(cache=model.Cache(ttlMs=5, cacheScope="private", tools=CacheHints(ttlMs=7))))
    listed = env.complete("tools/list", {"tools": []})
    assert listed == {"tools": [], "resultType": "complete", "_meta": {p.META_SERVER_INFO: SERVER_INFO},
                      "ttlMs": 7, "cacheScope": "private"}
    called = env.complete("tools/call", {"content": [], "_meta": {"mine": 1}})
    assert called == {"content": [], "resultType": "complete", "_meta": {"mine": 1, p.META_SERVER_INFO: SERVER_INFO}}
    assert env.complete("tools/call", 3) == {"value": 3, "resultType": "complete", "_meta": {p.META_SERVER_INFO: SERVER_INFO}}
    # what the payload already says wins
    assert env.complete("tools/list", {"resultType": "partial", "tools": []})["resultType"] == "partial"
    assert "ttlMs" not in env.complete("tools/list", {"resultType": "partial", "tools": []})
    assert env.cache_hints("resources/read", (1, None)) == (1, "private")


def test_envelope_server_info_can_be_off() -> None:
    env = Envelope(scenario(protocol=model.Protocol(serverInfo=False)))
    assert env.complete("tools/call", {"content": []}) == {"content": [], "resultType": "complete"}
    assert env.input_required({"requestState": "s"}) == {"resultType": "input_required", "requestState": "s"}


def test_envelope_messages_and_the_error_builder_shape() -> None:
    final = Envelope.final(7, {"resultType": "complete"})
    assert final.final and json.loads(final.data) == {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete"}}
    err = Envelope.error(7, -32602, None, {"x": 1})
    assert err.final and err.message == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Invalid params", "data": {"x": 1}}}
    assert err.data == jsonrpc.encode(err.message)
    note = Envelope.notification("notifications/progress", {"progress": 1})
    assert not note.final and note.message == {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}


# ---------------------------------------------------------------- errors.error_response


def test_error_response_shapes() -> None:
    assert errors.error_response(1, -32601, None) == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}
    assert errors.error_response(errors.ABSENT, -32700, "bad") == {"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}}
    assert errors.error_response(None, 5, None, None) == {"jsonrpc": "2.0", "id": None, "error": {"code": 5, "message": "Error", "data": None}}
    exc = errors.InvalidParams("Invalid params: x", data={"k": 1}, request_id="r")
    assert exc.response() == errors.error_response("r", -32602, "Invalid params: x", {"k": 1}) and exc.has_id
    assert not errors.ParseError("Parse error").has_id


# ---------------------------------------------------------------- RequestContext


def test_context_scope_is_built_once_and_kept_in_step() -> None:
    ctx = context(3, name="t", arguments={"a": 1}, meta={"progressToken": "p"})
    scope = ctx.scope()
    assert scope is ctx.scope()  # cached
    assert (scope["id"], scope["name"], scope["arguments"], scope["round"], scope["state"]) == (3, "t", {"a": 1}, 1, "start")
    assert "index" not in scope and "missingInputs" not in scope
    ctx.set_state("open")
    ctx.set_index(2)
    assert scope["state"] == "open" and scope["index"] == 2 and ctx.scope() is scope  # updated in place
    ctx.set_vars({"x": "y"})
    assert ctx.scope()["vars"] == {"x": "y"} and ctx.scope()["index"] == 2 and ctx.scope()["state"] == "open"
    ctx.set_rounds(2, {"e": {"action": "accept"}}, missing=["f"], request_state="mine")
    rebuilt = ctx.scope()
    assert (rebuilt["round"], rebuilt["inputResponses"], rebuilt["missingInputs"], rebuilt["requestState"]) == \
        (2, {"e": {"action": "accept"}}, ["f"], "mine")


def test_context_arguments_that_are_no_object_read_as_empty() -> None:
    assert context(1, name="t", arguments=[1]).arguments == {}
    assert context(1, uri="file:///a").uri == "file:///a"


# ---------------------------------------------------------------- StepExpander


def expander(*, compiled: bool = False, time_scale: float = 1.0, sc: model.Scenario | None = None) -> tuple[StepExpander, Session]:
    env = Envelope(sc or scenario())
    session = Session("start")
    rounds = Rounds(env, mrtr.StateCodec(b"unit-key"), check_capabilities=True)
    return StepExpander(env, session, rounds, ReplyCache(env) if compiled else None, FixedRandom(), time_scale), session


def expand(*steps: Step, mode: Mode = Mode.REQUEST, ctx: RequestContext | None = None, **kw: Any) -> list[Any]:
    steps_expander, _ = expander(**kw)
    plan = steps_expander.expand(ctx or context(1, name="t"), list(steps), "r", mode)
    return list(plan.all_actions())


def planned_nothing(actions: list[Any]) -> bool:
    """Only the loud error every reply without a final step ends with: the step itself planned nothing."""
    return len(actions) == 1 and "without an answer" in actions[0].message["error"]["message"]


def result_of(action: Any) -> Any:
    assert type(action) is Send and action.final, action
    return action.message["result"]


CC = "io.modelcontextprotocol/clientCapabilities"
ELICIT = {"method": "elicitation/create", "params": {"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}}
SECOND = model.Duration(1.0)

# (step, context params/meta, check of the actions it plans)
STEP_CASES: list[tuple[Step, dict[str, Any], Any]] = [
    (model.ResultStep(result={"content": [], "structuredContent": {"n": "{{ arguments.n }}"}}), {"arguments": {"n": 4}},
     lambda a: result_of(a[0])["structuredContent"] == {"n": 4} and len(a) == 1),
    (model.TextStep(text="hi {{ name }}"), {},
     lambda a: result_of(a[0])["content"] == [{"type": "text", "text": "hi t"}]),
    (model.ErrorStep(error=model.ErrorSpec(code=-32000, message="no {{ name }}", data={"k": 1})), {},
     lambda a: a[0].message["error"] == {"code": -32000, "message": "no t", "data": {"k": 1}}),
    (InputRequiredStep(inputRequired=InputRequiredSpec(inputRequests={"e": ELICIT})), {"meta": {CC: {"elicitation": {}}}},
     lambda a: result_of(a[0])["resultType"] == "input_required" and result_of(a[0])["inputRequests"] == {"e": ELICIT}),
    (model.SleepStep(sleep=SECOND), {}, lambda a: a[0] == Sleep(2.0)),  # time_scale 2
    (model.SleepStep(sleep=RandomDelay(min=model.Duration(1.0), max=model.Duration(3.0))), {}, lambda a: a[0] == Sleep(4.0)),
    (ProgressStep(progress=ProgressSpec(progress=1, total="{{ arguments.n }}")), {"arguments": {"n": 2}, "meta": {p.META_PROGRESS_TOKEN: "tok"}},
     lambda a: a[0].message["params"] == {"progressToken": "tok", "progress": 1, "total": 2}),
    (ProgressStep(progress=ProgressSpec(progress=1)), {}, planned_nothing),  # no token: nothing
    (LogStep(log=LogSpec(level="warning", data="w")), {"meta": {p.META_LOG_LEVEL: "info"}},
     lambda a: a[0].message["params"] == {"level": "warning", "data": "w"}),
    (LogStep(log=LogSpec(level="debug", data="d")), {"meta": {p.META_LOG_LEVEL: "info"}}, planned_nothing),
    (EmitStep(emit=EmitSpec(event="resources/updated", uri="{{ uri }}")), {"uri": "file:///x"},
     lambda a: a[0] == Emit("resources/updated", "file:///x")),
    (SetStateStep(setState="open"), {}, planned_nothing),
    (EndSubscriptionStep(endSubscription=EndSubscriptionSpec(how="cancelled")), {},
     lambda a: a[0].final and a[0].message["params"]["requestId"] == 1 and len(a) == 1),
    (RawStep(raw={"jsonrpc": "2.0", "id": "{{ id }}", "result": 1}), {}, lambda a: a[0] == WriteRaw(b'{"jsonrpc":"2.0","id":1,"result":1}\n')),
    (RawBytesStep(rawBytes="a\x00\xff"), {}, lambda a: a[0] == WriteRaw(b"a\x00\xff")),
    (HangStep(hang=True), {}, lambda a: a == [Park()]),
    (ExitStep(exit=ExitSpec(status=4, partialBytes=5)), {}, lambda a: a == [Exit(4, b'{"jso')]),
    (DribbleStep(dribble=DribbleSpec(chunkBytes=0, pause=SECOND)), {}, lambda a: a[0] == Dribble(1, 2.0)),
    (StderrStep(stderr="oops {{ id }}", repeat=3), {}, lambda a: a[0] == Stderr("oops 1", 3)),
    (StopReadingStep(stopReading=SECOND), {}, lambda a: a[0] == StopReading(2.0)),
    (StopReadingStep(stopReading="forever"), {}, lambda a: a[0] == StopReading(None)),
    (CloseStdoutStep(closeStdout=True), {}, lambda a: a[0] == CloseStdout()),
    (ForwardStep(forward="drop"), {}, lambda a: a == [Forward("drop")]),  # the proxy hands it on
    (HugeStep(huge=HugeSpec(bytes=7, char="é")), {}, lambda a: result_of(a[0])["content"][0]["text"] == "ééé"),
    # a task for a client without the extension: the outcome at once, as scripted (tasks: tests/core/test_tasks.py)
    (TaskStep(task=TaskSpec(withoutCapability="answer", outcome=[model.TextStep(text="later {{ name }}")])), {},
     lambda a: result_of(a[0])["content"] == [{"type": "text", "text": "later t"}] and len(a) == 1),
    (HttpStep(http=HttpSpec(status=503, body="é", headers={"Retry-After": "1"}, delay=SECOND,
                                        respondAs="sse", write="\xff", reset=True)), {},
     lambda a: a[0] == HttpFault(503, "é".encode(), (("Retry-After", "1"),), None, 2.0, "sse", b"\xff", False, True)),
    # a legacy request to the client: its own id, params rendered, the timeout scaled; nobody answers here
    (RequestStep(request=RequestSpec(method="ping", params={"n": "{{ arguments.n }}"}, timeout=SECOND)),
     {"arguments": {"n": 3}, "meta": {p.META_PROTOCOL_VERSION: p.LEGACY_VERSION}},
     lambda a: type(a[0]) is Ask and a[0].message == {"jsonrpc": "2.0", "id": "mockmcp-1", "method": "ping", "params": {"n": 3}}
     and a[0].timeout == 2.0),
]


@pytest.mark.parametrize(("step", "given", "check"), STEP_CASES, ids=[f"{type(s).__name__}-{i}" for i, (s, _, _) in enumerate(STEP_CASES)])
def test_each_step_class_plans_its_actions(step: Step, given: dict[str, Any], check: Any) -> None:
    params = {"name": "t", **{k: v for k, v in given.items() if k != "meta"}}
    ctx = context(1, meta=given.get("meta"), **params)
    actions = expand(step, ctx=ctx, time_scale=2.0)
    assert check(actions), actions


def test_every_step_class_of_the_model_has_a_case() -> None:
    step_classes = set(STEP_TYPES)
    assert step_classes - {type(s) for s, _, _ in STEP_CASES} == {LoopStep}  # loops: below


def test_each_step_of_a_part_goes_to_the_expander_of_its_own_part() -> None:
    """The dispatch table names, for every step a part of the model defines (loops are unrolled
    first), the part whose module holds its class; the steps every scenario may use need none."""
    of_parts = {t.KEY: t.__module__.rpartition(".")[2] for t in STEP_TYPES if t.__module__ != model.__name__ and t is not LoopStep}
    assert PART_OF_KEY == of_parts


def test_steps_after_a_final_step_are_not_planned_and_a_missing_answer_is_loud() -> None:
    assert len(expand(text("one"), text("two"))) == 1
    (only,) = expand(SetStateStep(setState="x"))
    assert only.final and only.message["error"]["code"] == p.INTERNAL_ERROR and "without an answer" in only.message["error"]["message"]


def test_set_state_changes_the_session_and_the_scope_of_later_steps() -> None:
    steps, session = expander()
    plan = steps.expand(context(1, name="t"), [SetStateStep(setState="open"), text("now {{ state }}")], "r")
    assert session.state == "open"
    assert result_of(plan.actions[0])["content"][0]["text"] == "now open"


def test_subscription_mode_emits_to_its_own_stream_and_parks() -> None:
    emit = EmitStep(emit=EmitSpec(event="tools/list_changed"))
    assert expand(emit, mode=Mode.SUBSCRIPTION) == [Emit("tools/list_changed", None, 1, has_only=True), Park()]
    assert expand(emit, mode=Mode.NOTIFICATION) == [Emit("tools/list_changed", None)]


def test_a_rawbytes_character_outside_latin1_is_the_requests_fault() -> None:
    with pytest.raises(errors.InvalidParams):
        expand(RawBytesStep(rawBytes="{{ arguments.a }}"), ctx=context(1, name="t", arguments={"a": "\u20ac"}))


def loop(times: int | str, *steps: Step) -> LoopStep:
    return LoopStep(loop=LoopSpec(times=times, steps=list(steps)))


def progress(value: str) -> ProgressStep:
    return ProgressStep(progress=ProgressSpec(progress=value))


def test_a_loop_sets_the_index_and_restores_the_outer_one() -> None:
    ctx = context(1, name="t", meta={p.META_PROGRESS_TOKEN: "p"})
    steps, _ = expander()
    plan = steps.expand(ctx, [loop(2, loop(2, progress("{{ index }}")), progress("{{ add(index, 10) }}")), text("done")], "r")
    sent = [a.message for a in plan.all_actions() if type(a) is Send]
    assert [m["params"]["progress"] for m in sent[:-1]] == [1, 2, 11, 1, 2, 12]
    assert ctx.index is None and "done" in json.dumps(sent[-1])


def test_a_long_loop_is_planned_within_the_eager_budget_and_the_rest_is_lazy() -> None:
    ctx = context(1, name="t", meta={p.META_PROGRESS_TOKEN: "p"})
    steps, _ = expander()
    plan = steps.expand(ctx, [loop(10_000, progress("{{ index }}")), text("done")], "r")
    assert len(plan.actions) <= EAGER_BUDGET and plan.rest is not None and not plan.immediate
    rest = list(plan.rest)
    sent = [a for a in plan.actions + rest if type(a) is Send]
    assert [json.loads(s.data)["params"]["progress"] for s in sent[:-1]] == list(range(1, 10_001))


def test_a_short_plan_of_sends_is_immediate() -> None:
    steps, _ = expander()
    plan = steps.expand(context(1, name="t", meta={p.META_PROGRESS_TOKEN: "p"}), [loop(3, progress("1")), text("done")], "r")
    assert plan.rest is None and plan.immediate and len(plan.actions) == 4


def test_a_loop_that_produces_nothing_still_hands_control_back() -> None:
    steps, _ = expander()
    plan = steps.expand(context(1, name="t"), [loop(1000, loop(1000, progress("1"))), text("never")], "r")  # no token
    assert plan.rest is not None
    assert all(next(plan.rest) is None for _ in range(3 * EAGER_BUDGET))


def test_a_client_mistake_in_the_lazy_rest_ends_the_plan_with_its_error() -> None:
    ctx = context(1, name="t", arguments={"total": "x"}, meta={p.META_PROGRESS_TOKEN: "p"})
    steps, _ = expander()
    bad = ProgressStep(progress=ProgressSpec(progress="{{ index }}", total="{{ arguments.total }}"))
    # fine for the eager part, then a total that is no number once the plan runs lazily
    plan = steps.expand(ctx, [loop(EAGER_BUDGET + 10, progress("{{ index }}")), loop(2, bad), text("done")], "r")
    assert plan.rest is not None
    *sent, last = list(plan.rest)
    assert type(last) is Send and last.final and last.message["error"]["code"] == p.INVALID_PARAMS
    assert all(not (type(a) is Send and a.final) for a in sent)  # the error is the one answer


def test_a_loop_count_that_is_no_whole_number_is_invalid_params() -> None:
    with pytest.raises(errors.InvalidParams, match="not a whole number"):
        expand(loop("{{ arguments.n }}", progress("1")), text("x"), ctx=context(1, name="t", arguments={"n": 2.5}))


def test_compiled_replies_give_the_same_send_as_the_general_path() -> None:
    steps: list[Step] = [model.ResultStep(result={"content": [{"type": "text", "text": "{{ arguments.v }}"}]})]
    written = []
    for compiled in (True, False):
        expanded, _ = expander(compiled=compiled)
        plan = expanded.expand(context(1, name="t", arguments={"v": "é\n"}), steps, "r")
        assert plan.immediate and len(plan.actions) == 1 and type(plan.actions[0]) is Send
        written.append(plan.actions[0].data)
        assert (expanded.replies is not None and expanded.replies.compiled() == 1) is compiled
    assert written[0] == written[1]


# ---------------------------------------------------------------- definitions.scenario_facts


def _every_step(steps: Any) -> Any:
    """Every step, loops opened, depth first in file order (the plain walk the tight one is checked against)."""
    for step in steps:
        yield step
        if isinstance(step, LoopStep):
            yield from _every_step(step.loop.steps)


def _loop(*steps: Any) -> LoopStep:
    return LoopStep(LoopSpec(times=2, steps=list(steps)))


def test_scenario_facts_finds_task_steps_in_order_and_logs_anywhere() -> None:
    from mockmcp.scenario.definitions import scenario_facts
    from mockmcp.scenario.loader import bundled_names, load

    task_a, task_b, task_c = (TaskSpec(ttlMs=n) for n in (1, 2, 3))  # told apart by ==
    log = LogStep(LogSpec(level="info", data="x"))
    rules = [
        model.Rule(steps=[TaskStep(task_a)]),
        model.Rule(sequence=[[_loop(model.TextStep("t"), TaskStep(task_b))], [TaskStep(task_c)]]),
    ]
    tools = [model.Tool(name="t", replies=rules)]
    assert scenario_facts(model.Scenario(mockmcp=1, tools=tools)) == ([task_a, task_b, task_c], False)
    in_loop = [model.Tool(name="l", replies=[model.Rule(steps=[_loop(log)])])]
    assert scenario_facts(model.Scenario(mockmcp=1, tools=in_loop))[1] is True
    on_timeline = model.Subscriptions(timeline=[log])
    assert scenario_facts(model.Scenario(mockmcp=1, subscriptions=on_timeline)) == ([], True)
    for name in bundled_names():  # and what a plain walk finds, over every bundled scenario
        scenario, _ = load(name, use_cache=False)
        owners = [*scenario.tools, *scenario.prompts, *scenario.resources, *scenario.resourceTemplates, *scenario.methods]
        lists = [steps for o in owners for r in o.replies for steps in [r.steps or [], *(r.sequence or [])]]
        steps = [s for lst in lists for s in _every_step(lst)]
        specs = [s.task for s in steps if isinstance(s, TaskStep)]
        logs = any(isinstance(s, LogStep) for s in [*steps, *_every_step(scenario.subscriptions.timeline)])
        assert scenario_facts(scenario) == (specs, logs), name


# ---------------------------------------------------------------- context.ROOTS


def test_each_root_reads_what_the_scope_holds_under_its_name() -> None:
    """Compiled replies read a path's first name from the context (``ROOTS``), templates
    from ``scope()``: the same object, however handling changed the context."""
    from mockmcp.core.context import ROOTS, Reask

    def contexts() -> Any:
        yield context()
        yield context(7, "resources/read", "s2", {"m": 1}, uri="file:///x", name=3, arguments=[1])
        ctx = context("a", "prompts/get", name="greet", arguments={"who": "me"})
        ctx.scope()  # built first, then kept in step by the setters
        ctx.set_vars({"v": 1})
        ctx.set_rounds(2, {"k": {"action": "accept"}}, missing=["k"], request_state="st", reask=Reask(1, None, {}, {}))
        ctx.set_state("later")
        ctx.set_index(4)
        ctx.set_response("r", {"ok": True})
        yield ctx
        fresh = context("b", arguments={"x": [1, 2]})
        fresh.set_state("unbuilt")  # set before any scope exists
        fresh.set_vars({"w": 2})
        yield fresh

    for ctx in contexts():
        scope = ctx.scope()
        for name, read in ROOTS.items():
            assert read(ctx) is scope[name], name
