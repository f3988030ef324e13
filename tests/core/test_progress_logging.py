"""Progress and log notifications, delays and --time-scale.

Over the fake link (the real shell, its virtual clock moved to each scripted
sleep), then the async harness on trio's autojump clock, then the CLI in a
subprocess.
"""

from __future__ import annotations

import time

import pytest
import trio
from support.paths import SCENARIOS
from support.process import run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import bundled, engine_for, scenario_engine
from support.messages import call, line, request
from support.shellharness import Harness, response_to

from mockmcp.scenario.loader import load, load_text

LOG_META = "io.modelcontextprotocol/logLevel"


def progress_link(**kw) -> FakeLink:
    return FakeLink(bundled("progress", **kw))


def slow(rid, steps=None, **meta):
    args = {} if steps is None else {"steps": steps}
    return request(rid, "tools/call", {"name": "slow_task", "arguments": args}, meta)


def check_all(schema, out):
    for m in out:
        schema.check(m, "tools/call")


def test_progress_with_token_is_increasing_and_ends_before_the_response(schema):
    link = progress_link()
    out = link.send(slow(1, 4, progressToken="tok"))
    check_all(schema, out)
    progress = [m for m in out if m.get("method") == "notifications/progress"]
    assert [m["params"]["progress"] for m in progress] == [1, 2, 3, 4]
    assert all(m["params"]["progressToken"] == "tok" and m["params"]["total"] == 4 for m in progress)
    assert progress[1]["params"]["message"] == "step 2 of 4"
    assert out[-1]["id"] == 1 and out[-1]["result"]["content"][0]["text"] == "completed 4 steps"
    assert all("id" not in m for m in out[:-1])  # nothing after the response
    # a short sleep between them: 50 ms apart on the virtual clock
    times = [at for at, data in link.timeline if b"notifications/progress" in data]
    assert times == pytest.approx([0.05, 0.10, 0.15, 0.20])


def test_default_steps_and_integer_token(schema):
    out = progress_link().send(slow(7, progressToken=7))
    check_all(schema, out)
    progress = [m["params"] for m in out if m.get("method") == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [(7, 1, 3), (7, 2, 3), (7, 3, 3)]


def test_no_progress_without_a_token(schema):
    out = progress_link().send(slow(1, 3))
    check_all(schema, out)
    assert [m.get("method") for m in out] == [None]  # just the response


def test_a_steps_argument_that_is_no_number_is_invalid_params(schema):
    # by default the tool's inputSchema (steps: integer) refuses it first: a tool error
    out = progress_link().send(slow(1, "many", progressToken="t"))
    check_all(schema, out)
    assert out[-1]["result"]["isError"] is True
    # unvalidated, the loop's template cannot count "many" times: -32602
    import attrs

    from mockmcp.launch.boot import new_engine

    scenario, _ = load(str(SCENARIOS / "progress.yaml"), use_cache=False)
    scenario = attrs.evolve(scenario, protocol=attrs.evolve(scenario.protocol, validateInput=False))
    out = FakeLink(new_engine(scenario)).send(slow(1, "many", progressToken="t"))
    check_all(schema, out)
    assert out[-1]["error"]["code"] == -32602


def _levels(out):
    return [m["params"]["level"] for m in out if m.get("method") == "notifications/message"]


def test_no_log_messages_without_a_log_level(schema):
    out = progress_link().send(slow(1, 2))
    check_all(schema, out)
    assert _levels(out) == []


@pytest.mark.parametrize("level, expected", [
    ("debug", ["debug", "info", "debug", "debug", "warning", "error"]),
    ("info", ["info", "warning", "error"]),
    ("warning", ["warning", "error"]),
    ("error", ["error"]),
    ("critical", []),
])
def test_log_messages_at_or_above_the_requested_level(schema, level, expected):
    out = progress_link().send(slow(1, 2, **{LOG_META: level}))
    check_all(schema, out)
    assert _levels(out) == expected
    logs = [m["params"] for m in out if m.get("method") == "notifications/message"]
    assert all(p["logger"] == "slow_task" for p in logs)
    if level == "info":
        assert logs[0]["data"] == {"event": "started", "steps": 2}  # a whole-value template keeps its type


def test_invalid_log_level_is_invalid_params(schema):
    out = progress_link().send(slow(1, 2, **{LOG_META: "loud"}))
    schema.check(out[0], "tools/call")
    assert out[0]["error"]["code"] == -32602


def test_time_scale_scales_every_scripted_sleep():
    link = progress_link(time_scale=0.1)
    link.send(slow(1, 2, progressToken="t"))
    assert [at for at, _ in link.timeline] == pytest.approx([0.005, 0.01, 0.01])
    link = progress_link(time_scale=3)
    link.send(slow(1, 2, progressToken="t"))
    assert [at for at, _ in link.timeline] == pytest.approx([0.15, 0.3, 0.3])


def test_random_delays_are_scaled_and_seeded():
    yaml = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps: [{sleep: {min: 100ms, max: 200ms}}, {text: ok}]
"""
    a = FakeLink(engine_for(yaml, seed=1, time_scale=0.5))
    b = FakeLink(engine_for(yaml, seed=1, time_scale=0.5))
    a.send(call(1, "t"))
    b.send(call(1, "t"))
    assert a.timeline[0][0] == b.timeline[0][0]
    assert 0.05 <= a.timeline[0][0] <= 0.1


# ------------------------------------------------------------------ mockmcp check


PROGRESS_YAML = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps:
          - progress: {progress: 1}
          - progress: {progress: 1%s}
          - text: ok
"""


def test_check_warns_on_non_increasing_progress():
    _, warnings = load_text(PROGRESS_YAML % "", "<t>")
    assert len(warnings) == 1 and warnings[0].level == "warning"
    assert "progress must increase" in warnings[0].message
    assert (warnings[0].line, warnings[0].column) == (8, 13)


def test_deliberate_silences_the_progress_warning():
    _, warnings = load_text(PROGRESS_YAML % ", deliberate: true", "<t>")
    assert warnings == []


def test_check_warns_inside_loop():
    yaml = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps:
          - loop: {times: 2, steps: [{progress: {progress: 5}}, {progress: {progress: 4}}]}
          - text: ok
"""
    _, warnings = load_text(yaml, "<t>")
    assert [w.message.split(" (")[0] for w in warnings] == ["progress must increase"]


def test_check_rejects_final_steps_inside_loop():
    from mockmcp.scenario.problems import LoadError

    yaml = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps:
          - loop: {times: 2, steps: [{text: no}]}
          - text: ok
"""
    with pytest.raises(LoadError) as info:
        load_text(yaml, "<t>")
    assert "a loop holds only non-final steps" in str(info.value)


def test_bundled_progress_scenario_checks_clean():
    assert load("progress", use_cache=False)[1] == []


# ------------------------------------------------------------------ the real shell, virtual time


async def test_shell_delays_land_on_time(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("progress")).start(nursery)
        t0 = trio.current_time()
        await h.send(slow(1, 3, progressToken="p"))
        out = await h.until(response_to(1))
        for m in out:
            schema.check(m, "tools/call")
        times = [at - t0 for (at, _), m in zip(h.lines, out) if m.get("method") == "notifications/progress"]
        assert times == pytest.approx([0.05, 0.10, 0.15], abs=1e-6)
        h.check_all(schema)
        await h.eof()


async def test_shell_time_scale(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("progress", time_scale=4)).start(nursery)
        t0 = trio.current_time()
        await h.send(slow(1, 2, progressToken="p"))
        out = await h.until(response_to(1))
        assert [at - t0 for at, _ in h.lines] == pytest.approx([0.2, 0.4, 0.4], abs=1e-6)
        assert out[-1]["result"]["content"][0]["text"] == "completed 2 steps"
        h.check_all(schema)
        await h.eof()


# ------------------------------------------------------------------ the CLI


def test_cli_time_scale_shrinks_a_30_second_tool(schema):
    msg = call(1, "long_running", meta={"progressToken": "t"})
    started = time.monotonic()
    proc = run_mock("run", "cancel", "--time-scale", "0.0005", "--no-cache", input=line(msg), timeout=60)
    elapsed = time.monotonic() - started
    out = [schema.check_line(raw + b"\n", "tools/call") for raw in proc.stdout.splitlines()]
    assert out[-1]["result"]["content"][0]["text"] == "finished after 30 s"
    assert [m["params"]["progress"] for m in out[:-1]] == list(range(1, 301))
    assert elapsed < 20  # unscaled it would take 30 s
