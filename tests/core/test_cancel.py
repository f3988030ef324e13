"""Client cancellation (notifications/cancelled) through the real trio shell.

Runs on trio's autojump clock: the bundled long_running tool would take 30 s
of virtual time; every assertion about "nothing more was written" watches a
generous virtual window.
"""

from __future__ import annotations

import json

import trio
from support.process import run_mock
from support.messages import call, cancelled, line
from support.engines import scenario_engine
from support.shellharness import Harness, response_to


def long_call(rid):
    return call(rid, "long_running", meta={"progressToken": f"p{rid}"})


def quick(rid):
    return call(rid, "quick")


async def test_cancel_stops_the_script_at_once(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("cancel")).start(nursery)
        await h.send(long_call(1))
        seen = [await h.next() for _ in range(3)]
        for m in seen:
            schema.check(m, "tools/call")
        assert [m["params"]["progress"] for m in seen] == [1, 2, 3]
        # Cancel midway between two progress notifications (the next is due 50 ms later).
        await trio.sleep(0.05)
        await h.send(cancelled(1, "user pressed stop"))
        after = await h.quiet_for(60)  # twice the tool's whole run
        assert after == []  # no progress, no response
        assert 1 not in h.engine.session.in_flight
        # The server lives on and answers other requests.
        await h.send(quick(2))
        msg = await h.next()
        schema.check(msg, "tools/call")
        assert msg["id"] == 2 and msg["result"]["content"][0]["text"] == "quick answer"
        assert "request 1 cancelled by the client (user pressed stop)" in h.stderr_text()
        h.check_all(schema)
        await h.eof()


async def test_cancel_affects_only_the_named_request(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("cancel")).start(nursery)
        await h.send(long_call("a"), long_call("b"))
        await trio.sleep(0.25)
        t_cancel = trio.current_time()
        await h.send(cancelled("a"))
        await h.quiet_for(1.0)
        after = [json.loads(raw) for at, raw in h.lines if at > t_cancel]
        assert len(after) == 10, "b keeps reporting every 100 ms"
        assert {m["params"]["progressToken"] for m in after} == {"pb"}
        await h.send(cancelled("b"))
        await h.quiet_for(0.01)
        await h.silent_for(40)
        h.check_all(schema)
        await h.eof()


async def test_unknown_and_finished_ids_are_ignored(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("cancel"), log_level="debug").start(nursery)
        await h.send(quick(5))
        assert (await h.next())["id"] == 5
        await h.send(long_call(6))
        first = await h.next()
        # a finished id, an unknown id, an id of the wrong type, a malformed notification
        await h.send(cancelled(5), cancelled(999), cancelled(None), cancelled([6]),
                     {"jsonrpc": "2.0", "method": "notifications/cancelled"})
        nxt = await h.next()
        assert first["params"]["progress"] == 1 and nxt["params"]["progress"] == 2  # 6 runs on
        assert "error" not in nxt  # notifications never get a response, not even an error
        assert "cancelled" not in h.stderr_text()
        await h.send(cancelled(6))
        await h.quiet_for(0.01)
        await h.silent_for(40)
        assert "request 6 cancelled by the client" in h.stderr_text()
        h.check_all(schema)
        await h.eof()


async def test_cancel_during_a_sleep_before_any_output(schema, autojump_clock):
    yaml = """
mockmcp: 1
tools:
  - name: slow
    replies:
      - steps: [{sleep: 10s}, {progress: {progress: 1}}, {text: late}]
"""
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine(yaml)).start(nursery)
        await h.send(call(1, "slow", meta={"progressToken": 1}))
        await trio.sleep(1)
        await h.send(cancelled(1))
        await h.silent_for(30)
        h.check_all(schema)
        await h.eof()


async def test_id_can_be_reused_after_cancel(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await Harness(scenario_engine("cancel")).start(nursery)
        await h.send(long_call(1))
        await h.next()
        await h.send(cancelled(1), quick(1))
        msgs = await h.until(response_to(1))
        assert msgs[-1]["result"]["content"][0]["text"] == "quick answer"
        h.check_all(schema)
        await h.eof()


def test_cancellation_is_logged_on_stderr_at_info_level(schema):
    data = line(long_call(1)) + line(cancelled(1, "timeout")) + line(quick(2))
    proc = run_mock("run", "cancel", "--log-level", "info", "--no-cache", input=data, timeout=30)
    out = [json.loads(raw) for raw in proc.stdout.splitlines()]
    for m in out:
        schema.check(m, "tools/call")
    assert [m.get("id") for m in out if "id" in m] == [2]  # nothing for the cancelled request but earlier progress
    assert "request 1 cancelled by the client (timeout)" in proc.stderr.decode()
    # At the default level (warning) a cancellation is routine and stays quiet.
    quiet = run_mock("run", "cancel", "--no-cache", input=data, timeout=30)
    assert b"cancelled" not in quiet.stderr


def test_bundled_cancel_scenario_checks_clean():
    from mockmcp.scenario.loader import load

    assert load("cancel", use_cache=False)[1] == []
