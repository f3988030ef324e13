"""subscriptions/listen: ack, filtering, demultiplexing, emitted and timed events, endings.

Over the fake link (the real shell, settled after each send), then the async
harness on trio's autojump clock for ordering, client cancellation and EOF.
"""

from __future__ import annotations

import json

import trio
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import bundled, engine_for, scenario_engine
from support.messages import call, cancelled, listen, request
from support.shellharness import Harness

from mockmcp.scenario.loader import load, load_text

SUB = "io.modelcontextprotocol/subscriptionId"


def sub_link(**kw) -> FakeLink:
    return FakeLink(bundled("subscriptions", **kw))


def touch(rid, uri):
    return call(rid, "touch", uri=uri)


def refresh(rid):
    return call(rid, "refresh_tools")


def check(schema, msgs, method="tools/call"):
    for m in msgs:
        schema.check(m, "subscriptions/listen" if m.get("id") in ("s1", "s2") else method)


def notes(msgs):
    return [(m["method"], m["params"]["_meta"][SUB], m["params"].get("uri")) for m in msgs if "method" in m]


UNTIMED = """
mockmcp: 1
tools: [{name: t}]
prompts: [{name: p}]
resources: [{uri: "file:///a", name: a, text: a}, {uri: "file:///b", name: b, text: b}]
"""


def test_ack_first_with_the_honored_subset(schema):
    link = FakeLink(engine_for("mockmcp: 1\ntools: [{name: t}]\n"))
    out = link.send(listen("s1", toolsListChanged=True, promptsListChanged=True, resourcesListChanged=True,
                           resourceSubscriptions=["file:///x"]))
    check(schema, out)
    assert len(out) == 1
    assert out[0]["method"] == "notifications/subscriptions/acknowledged"
    assert out[0]["params"] == {"_meta": {SUB: "s1"}, "notifications": {"toolsListChanged": True}}


def test_everything_honored_when_the_scenario_supports_it(schema):
    link = FakeLink(engine_for(UNTIMED))
    want = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
            "resourceSubscriptions": ["file:///a"]}
    out = link.send(listen("s1", **want))
    check(schema, out)
    assert out[0]["params"]["notifications"] == want


def test_only_requested_kinds_reach_each_stream(schema):
    link = FakeLink(engine_for(UNTIMED.replace("tools: [{name: t}]", """tools:
  - name: t
    replies:
      - steps:
          - emit: {event: tools/list_changed}
          - emit: {event: prompts/list_changed}
          - emit: {event: resources/list_changed}
          - emit: {event: resources/updated, uri: "file:///a"}
          - emit: {event: resources/updated, uri: "file:///b"}
          - text: ok""")))
    acks = link.send(listen("s1", toolsListChanged=True, resourceSubscriptions=["file:///b"]),
                     listen("s2", promptsListChanged=True, resourcesListChanged=True, resourceSubscriptions=["file:///a"]),
                     listen(3, toolsListChanged=False))
    check(schema, acks)
    assert [m["params"]["_meta"][SUB] for m in acks] == ["s1", "s2", 3]
    out = link.send(call(9, "t"))
    check(schema, out)
    assert notes(out) == [
        ("notifications/tools/list_changed", "s1", None),
        ("notifications/prompts/list_changed", "s2", None),
        ("notifications/resources/list_changed", "s2", None),
        ("notifications/resources/updated", "s2", "file:///a"),
        ("notifications/resources/updated", "s1", "file:///b"),
    ]
    assert out[-1]["id"] == 9


def test_a_stream_with_two_resource_uris_gets_updates_to_each(schema):
    """Both URIs of one listen request are honoured: the ack lists both, and an update to either
    (the second too) reaches that stream; a URI it did not ask for does not."""
    link = FakeLink(engine_for(UNTIMED.replace("tools: [{name: t}]", """tools:
  - name: touch
    inputSchema: {type: object, properties: {uri: {type: string}}}
    replies:
      - steps:
          - emit: {event: resources/updated, uri: "{{ arguments.uri }}"}
          - text: ok""").replace(
        '{uri: "file:///b", name: b, text: b}]',
        '{uri: "file:///b", name: b, text: b}, {uri: "file:///c", name: c, text: c}]')))
    ack = link.send(listen("s1", resourceSubscriptions=["file:///a", "file:///b"]))
    check(schema, ack)
    assert ack[0]["params"]["notifications"] == {"resourceSubscriptions": ["file:///a", "file:///b"]}
    for rid, uri in enumerate(["file:///b", "file:///c", "file:///a"], start=1):
        out = link.send(touch(rid, uri))
        check(schema, out)
        want = [] if uri == "file:///c" else [("notifications/resources/updated", "s1", uri)]
        assert notes(out) == want, (uri, out)


def test_touch_and_refresh_tools_reach_matching_streams(schema):
    link = sub_link()
    link.send(listen("s1", resourceSubscriptions=["file:///notes.txt"]), listen("s2", toolsListChanged=True))
    out = link.send(touch(1, "file:///notes.txt"), touch(2, "file:///other"), refresh(3))
    check(schema, out)
    # three requests at once: the shell runs them concurrently, so their order is not fixed
    assert sorted(notes(out)) == [("notifications/resources/updated", "s1", "file:///notes.txt"),
                                  ("notifications/tools/list_changed", "s2", None)]
    assert sorted((m["id"], m["result"]["content"][0]["text"]) for m in out if "id" in m) == [
        (1, "touched file:///notes.txt"), (2, "touched file:///other"), (3, "tools refreshed")]


def test_events_without_subscribers_go_nowhere(schema):
    out = sub_link().send(touch(1, "file:///notes.txt"), refresh(2))
    check(schema, out)
    assert [m.get("id") for m in out] == [1, 2]


def test_timer_events_on_the_virtual_clock(schema):
    link = sub_link()
    out = link.send(listen("s1", resourceSubscriptions=["clock://now"]), listen("s2", toolsListChanged=True))
    check(schema, out)
    updates = [(at, json.loads(d)) for at, d in link.timeline if b"resources/updated" in d]
    assert [round(at, 6) for at, _ in updates] == [0.5 * n for n in range(1, 11)]  # after 500ms, every 500ms, 10 times
    assert {m["params"]["_meta"][SUB] for _, m in updates} == {"s1"}  # s2 did not ask for clock://now
    assert all(m["params"]["uri"] == "clock://now" for _, m in updates)


def test_timers_scale_with_time_scale():
    link = sub_link(time_scale=0.1)
    link.send(listen("s1", resourceSubscriptions=["clock://now"]))
    times = [at for at, d in link.timeline if b"resources/updated" in d]
    assert times[0] == 0.05 and round(times[-1], 6) == 0.5


def test_timers_interleave_with_the_timeline_and_stop_at_its_end(schema):
    yaml = """
mockmcp: 1
tools: [{name: t}]
subscriptions:
  timers:
    - {emit: {event: tools/list_changed}, after: 100ms, every: 200ms, count: 100}
  timeline:
    - sleep: 250ms
    - emit: {event: tools/list_changed}
    - sleep: 300ms
    - endSubscription: {how: result}
"""
    link = FakeLink(engine_for(yaml))
    out = link.send(listen("s1", toolsListChanged=True))
    check(schema, out)
    times = [round(at, 6) for at, _ in link.timeline]
    # ack, timer 0.1, 0.3 (splitting the 250ms sleep: timeline emit at 0.25), 0.5, end at 0.55
    assert times == [0.0, 0.1, 0.25, 0.3, 0.5, 0.55]
    assert out[-1] == {"jsonrpc": "2.0", "id": "s1",
                       "result": {"resultType": "complete", "_meta": {SUB: "s1", "io.modelcontextprotocol/serverInfo": out[-1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]}}}
    assert "s1" not in link.engine.session.subscriptions  # ended: later events go nowhere


def test_server_ends_a_stream_with_cancelled(schema):
    yaml = """
mockmcp: 1
tools: [{name: t}]
subscriptions:
  timeline:
    - emit: {event: tools/list_changed}
    - endSubscription: {how: cancelled}
"""
    link = FakeLink(engine_for(yaml))
    out = link.send(listen(4, toolsListChanged=True))
    check(schema, out)
    assert [m["method"] for m in out] == ["notifications/subscriptions/acknowledged", "notifications/tools/list_changed",
                                          "notifications/cancelled"]
    assert out[-1]["params"]["requestId"] == 4


def test_client_cancel_ends_a_stream(schema):
    link = sub_link()
    link.send(listen("s1", toolsListChanged=True), listen("s2", toolsListChanged=True))
    assert link.send(cancelled("s1")) == []
    out = link.send(refresh(1))
    check(schema, out)
    assert notes(out) == [("notifications/tools/list_changed", "s2", None)]


def test_listen_needs_a_notifications_object(schema):
    out = sub_link().send(request(1, "subscriptions/listen", {}))
    schema.check(out[0])
    assert out[0]["error"]["code"] == -32602


def test_check_validates_timers():
    from mockmcp.scenario.problems import LoadError
    import pytest

    bad = """
mockmcp: 1
subscriptions:
  timers:
    - {emit: {event: resources/updated}, count: 2}
"""
    with pytest.raises(LoadError) as info:
        load_text(bad, "<t>")
    text = str(info.value)
    assert "resources/updated needs a 'uri'" in text and "needs a positive 'every'" in text


def test_bundled_subscriptions_scenario_checks_clean():
    assert load("subscriptions", use_cache=False)[1] == []


# ------------------------------------------------------------------ the real shell


async def test_shell_ack_precedes_events_caused_by_later_lines(schema, autojump_clock):
    for _ in range(20):  # trio schedules tasks in varying order; the ack must win every time
        async with trio.open_nursery() as nursery:
            h = await Harness(scenario_engine("subscriptions")).start(nursery)
            await h.send(listen("s1", resourceSubscriptions=["file:///notes.txt"]), touch(2, "file:///notes.txt"))
            first, second = await h.next(), await h.next()
            assert first["method"] == "notifications/subscriptions/acknowledged"
            assert second["method"] == "notifications/resources/updated"
            await h.next()
            h.check_all(schema)
            await h.eof()


async def test_shell_timers_and_client_cancel(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("subscriptions")).start(nursery)
        t0 = trio.current_time()
        await h.send(listen("s1", resourceSubscriptions=["clock://now"]), listen("s2", resourceSubscriptions=["clock://now"]))
        msgs = [await h.next() for _ in range(2 + 2 * 3)]  # two acks, three ticks each
        check(schema, msgs)
        assert [round(at - t0, 6) for at, _ in h.lines[2:]] == [0.5, 0.5, 1.0, 1.0, 1.5, 1.5]
        t_cancel = trio.current_time()
        await h.send(cancelled("s1"))
        await h.quiet_for(10)
        await h.probe()  # the stream is live and nothing of s1's was queued behind the wait
        after = [json.loads(raw) for at, raw in h.lines if at > t_cancel][:-1]
        assert len(after) == 7 and {m["params"]["_meta"][SUB] for m in after} == {"s2"}
        h.check_all(schema)
        await h.eof()


async def test_shell_eof_ends_every_stream_without_delay(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("subscriptions"), grace=5).start(nursery)
        await h.send(listen("s1", resourceSubscriptions=["clock://now"]), listen("s2", toolsListChanged=True))
        await h.next(), await h.next()
        t_eof = trio.current_time()
        h.check_all(schema)
        await h.eof()
        await h.done.wait()
        assert trio.current_time() - t_eof < 0.01  # not the 5 s grace, not the timer's 5 s
        assert h.exit_status == 0


def test_process_exits_promptly_at_eof_with_open_streams(schema):
    import time

    from support.messages import line

    from support.process import run_mock

    data = line(listen("s1", resourceSubscriptions=["clock://now"])) + line(listen("s2", toolsListChanged=True))
    started = time.monotonic()
    proc = run_mock("run", "subscriptions", "--grace", "20", "--no-cache", input=data, timeout=60)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0
    out = [schema.check_line(raw + b"\n") for raw in proc.stdout.splitlines()]
    assert [m["method"] for m in out] == ["notifications/subscriptions/acknowledged"] * 2
    assert elapsed < 10  # neither the 20 s grace nor the 5 s of clock ticks


LOG_LEVEL = "io.modelcontextprotocol/logLevel"
TEXT_FIELDS = """
mockmcp: 1
resources: [{uri: "file:///r", name: r, text: hi}]
tools:
  - name: touch
    replies:
      - steps:
          - progress: {progress: 1, total: 2, message: "{{ arguments.u }}"}
          - emit: {event: resources/updated, uri: "{{ arguments.u }}"}
          - log: {level: info, logger: "{{ arguments.u }}", data: x}
          - text: done
"""


def test_a_whole_template_in_a_text_field_sends_text_whatever_the_client_sent(schema, tmp_path):
    """``uri``, ``message`` and ``logger`` are strings in the schema: a template that is one tag keeps its
    value's JSON type elsewhere, but here what the client sent (an object, a list, a number)
    is sent as text, and an object in an emitted ``uri`` no longer kills the process."""
    from support.messages import line

    from support.process import run_mock

    scenario = tmp_path / "text-fields.yaml"
    scenario.write_text(TEXT_FIELDS)
    values = [{"a": 1}, [1, 2], 7, 2.5, True, None, "file:///r"]
    texts = ['{"a":1}', "[1,2]", "7", "2.5", "true", "", "file:///r"]
    data = line(listen("s1", resourceSubscriptions=texts))
    for n, value in enumerate(values):
        data += line(call(n, "touch", meta={"progressToken": f"p{n}", LOG_LEVEL: "info"}, u=value))
    proc = run_mock("run", str(scenario), "--no-cache", input=data, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    out = [json.loads(raw) for raw in proc.stdout.splitlines()]
    check(schema, out)
    answered = sorted(m["id"] for m in out if "result" in m and m.get("id") != "s1")
    assert answered == list(range(len(values)))
    progress = [m["params"]["message"] for m in out if m.get("method") == "notifications/progress"]
    updated = [m["params"]["uri"] for m in out if m.get("method") == "notifications/resources/updated"]
    assert progress == texts
    loggers = [m["params"].get("logger") for m in out if m.get("method") == "notifications/message"]
    assert loggers == texts
    assert updated == texts
