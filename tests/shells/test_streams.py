"""The timer heap for listen streams (streams.py) against the task-per-stream path.

``Shell(timed_streams=False)`` runs every stream as a task of its own: the plain
path. Generated scenarios (timers, timelines that sleep, emit, log and end the
stream, a tool that emits to every stream) and generated clients (listen
requests asking for different events, cancels, tool calls, at chosen virtual
times) run through both on trio's mock clock; every line and the virtual time it
was written at must be the same.

No two events of different sources may tie, or the two paths may order them either
way (a timeline that ends at once and a tool's emit in the same instant; two tool
calls whose emits interleave). Scripted times are multiples of ten after a stream's
listen, and listens fall on times that end in 1: a stream's timeline and timers fire
at times that end in 1. Tool calls and cancels fall on odd times that end in 3, 5, 7
or 9, no two at the same time.
"""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing
from support.messages import META, request
from support.engines import engine_for
from hypothesis import given, settings, strategies as st
from support.shellharness import Harness, response_to

EVENTS = ["tools/list_changed", "prompts/list_changed", "resources/list_changed", "resources/updated"]
WANTS = ["toolsListChanged", "promptsListChanged", "resourcesListChanged"]


def _emit(event: str) -> str:
    return f"{{event: {event}, uri: 'file:///a'}}" if event == "resources/updated" else f"{{event: {event}}}"


timer = st.builds(
    lambda after, every, count, event: f"    - {{after: {after * 10}ms, every: {every * 10}ms, count: {count}, emit: {_emit(event)}}}",
    st.integers(0, 30), st.integers(1, 30), st.integers(1, 4), st.sampled_from(EVENTS),
)
step = st.one_of(
    st.builds(lambda n: f"    - sleep: {n * 10}ms", st.integers(0, 40)),
    st.builds(lambda e: f"    - emit: {_emit(e)}", st.sampled_from(EVENTS)),
    st.just("    - log: {level: info, data: tick}"),
)
ending = st.sampled_from(["", "    - endSubscription: {how: result}", "    - endSubscription: {how: cancelled}"])


@st.composite
def scenarios(draw: Any) -> str:
    timers = draw(st.lists(timer, max_size=3))
    timeline = draw(st.lists(step, max_size=5)) + [draw(ending)]
    return "\n".join([
        "mockmcp: 1",
        "server: {name: streams, version: 1.0.0}",
        "capabilities: {tools: {listChanged: true}, prompts: {listChanged: true}, resources: {listChanged: true, subscribe: true}, logging: {}}",
        "tools:",
        "  - name: poke",
        "    replies:",
        "      - steps: [{emit: {event: tools/list_changed}}, {emit: {event: resources/updated, uri: 'file:///a'}}, {text: poked}]",
        "prompts: [{name: p}]",
        "resources: [{uri: 'file:///a', name: a, text: a}]",
        "subscriptions:",
        "  timers:" + ("" if timers else " []"),
        *timers,
        "  timeline:" + ("" if any(timeline) else " []"),
        *[s for s in timeline if s],
    ]) + "\n"


def _listen(rid: int, wants: list[str], uris: bool) -> dict[str, Any]:
    notifications: dict[str, Any] = {w: True for w in wants}
    if uris:
        notifications["resourceSubscriptions"] = ["file:///a"]
    return {"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen",
            "params": {"notifications": notifications, "_meta": META}}


@st.composite
def clients(draw: Any) -> list[tuple[int, dict[str, Any]]]:
    """(virtual milliseconds, message) in time order, at times that never tie a scripted event."""
    script: list[tuple[int, dict[str, Any]]] = []
    taken: set[int] = set()

    def free(at: int) -> int:
        """``at``, or the next odd time after it that ends in 3, 5, 7 or 9 and no action holds."""
        while at in taken or at % 10 == 1:
            at += 2
        taken.add(at)
        return at

    streams = draw(st.integers(1, 6))
    for rid in range(1, streams + 1):
        at = draw(st.integers(0, 60)) * 10 + 1
        script.append((at, _listen(rid, draw(st.lists(st.sampled_from(WANTS), unique=True)), draw(st.booleans()))))
        if draw(st.booleans()):
            later = free(at + draw(st.integers(1, 300)) * 2)
            script.append((later, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}))
    for n in range(draw(st.integers(0, 3))):
        at = free(draw(st.integers(0, 400)) * 2 + 1)
        script.append((at, {"jsonrpc": "2.0", "id": f"poke-{n}", "method": "tools/call",
                            "params": {"name": "poke", "arguments": {}, "_meta": META}}))
    script.sort(key=lambda e: e[0])
    return script


def _run(yaml_text: str, script: list[tuple[int, dict[str, Any]]], *, timed_streams: bool) -> list[tuple[float, bytes]]:
    async def main() -> list[tuple[float, bytes]]:
        async with trio.open_nursery() as nursery:
            h = await Harness(engine_for(yaml_text), log_level="quiet", timed_streams=timed_streams).start(nursery)
            start = trio.current_time()
            for ms, msg in script:
                await trio.sleep_until(start + ms / 1000)
                await h.send(msg)
            await trio.sleep(2.0)  # every timer and timeline has run out by then
            await h.send(request("end", "server/discover"))
            await h.until(response_to("end"))  # the shell is still reading and writing
            await h.eof()
            await h.done.wait()
            nursery.cancel_scope.cancel()
        return [(round(t - start, 6), line) for t, line in h.lines]

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def _by_stream(lines: list[tuple[float, bytes]]) -> dict[Any, list[tuple[float, bytes]]]:
    out: dict[Any, list[tuple[float, bytes]]] = {}
    for t, raw in lines:
        msg = json.loads(raw)
        params = msg.get("params") or {}
        # A stream's events carry its subscription id; its end (notifications/cancelled) its request id.
        key = (params.get("_meta") or {}).get("io.modelcontextprotocol/subscriptionId", params.get("requestId", msg.get("id")))
        out.setdefault(json.dumps(key), []).append((t, raw))
    return out


@settings(max_examples=60, deadline=None)
@given(scenarios(), clients())
def test_the_timer_heap_writes_what_a_task_per_stream_writes(yaml_text: str, script: list[tuple[int, dict[str, Any]]]) -> None:
    heap = _run(yaml_text, script, timed_streams=True)
    tasks = _run(yaml_text, script, timed_streams=False)
    assert sorted(heap) == sorted(tasks)  # the same lines at the same virtual times
    assert _by_stream(heap) == _by_stream(tasks)  # and in the same order on each stream


def test_the_heap_path_is_taken_for_streams_with_timers() -> None:
    """The differential test above compares two paths only if the heap one actually runs."""
    yaml_text = "\n".join([
        "mockmcp: 1", "server: {name: s, version: 1.0.0}", "capabilities: {tools: {listChanged: true}}", "tools: [{name: t}]",
        "subscriptions:", "  timers:", "    - {after: 10ms, every: 10ms, count: 2, emit: {event: tools/list_changed}}", "",
    ])

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            h = await Harness(engine_for(yaml_text), log_level="quiet").start(nursery)
            await h.send(_listen(1, ["toolsListChanged"], False))
            await h.next()  # the ack
            assert 1 in h.shell.streams and 1 not in h.shell.scopes  # no task, no cancel scope
            assert [(await h.next())["method"] for _ in range(2)] == ["notifications/tools/list_changed"] * 2
            assert 1 not in h.shell.streams and 1 in h.shell.parked  # parked like a bare subscription
            await h.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
            await h.probe()
            assert 1 not in h.shell.parked and 1 not in h.shell.conn.engine.session.in_flight
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
