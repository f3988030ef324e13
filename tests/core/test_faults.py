"""Every fault of the catalogue: what the core plans, and what the shell writes for it.

Plan-level tests look at the actions the core returns; the rest run them in the
real shell on memory streams, through the fake link or the async harness
(``tests/shells/test_faults_e2e.py`` runs the same faults in a real process). Lines
meant to be valid are schema-checked; the lies are checked to be exactly the
lie the scenario asked for.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from support.paths import SCENARIOS
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import bundled, engine_for, plan_for
from support.messages import call, line
from support.shellharness import Harness

from mockmcp.core.actions import CloseStdout, Dribble, Exit, Park, Sleep, Stderr, StopReading, WriteRaw
from mockmcp.core.connection import Connection


# ------------------------------------------------------------ bundled `faults`


def test_faults_hang_parks_and_other_requests_are_served(schema):
    link = FakeLink(bundled("faults"))
    assert link.send(call(1, "hang")) == []
    assert 1 in link.open
    (out,) = link.send(call(2, "flaky"))
    schema.check(out, "tools/call")
    assert out["id"] == 2


def test_faults_crash_exits_3_before_answering():
    plan = plan_for(bundled("faults"), call(1, "crash"))
    assert plan.actions == [Exit(3, b"")]


def test_faults_garbage_is_a_non_json_line_then_the_result(schema):
    _, data = lie("garbage", 1, "faults")
    first, second = data.split(b"\n")[:2]
    with pytest.raises(ValueError):
        json.loads(first)
    schema.check_line(second + b"\n", "tools/call")


def test_faults_flaky_fails_twice_then_succeeds_and_stays_succeeding(schema):
    link = FakeLink(bundled("faults"))
    outs = [link.send(call(i, "flaky"))[0] for i in range(1, 5)]
    for o in outs:
        schema.check(o, "tools/call")
    assert [o.get("error", {}).get("code") for o in outs] == [-32603, -32603, None, None]
    assert outs[2]["result"]["content"][0]["text"] == "flaky succeeded"


def test_faults_slow_sleeps_two_seconds(schema):
    link = FakeLink(bundled("faults"))
    (out,) = link.send(call(1, "slow"))
    schema.check(out, "tools/call")
    assert link.timeline[-1][0] == pytest.approx(2.0)


def test_faults_bad_result_has_no_result_type():
    link = FakeLink(bundled("faults"))
    (out,) = link.send(call(1, "bad_result"))
    assert out["id"] == 1 and "resultType" not in out["result"]


# ------------------------------------------------------------ timing

TIMING = """
mockmcp: 1
tools:
  - name: fixed
    replies: [{steps: [{sleep: 250ms}, {text: ok}]}]
  - name: random
    replies: [{steps: [{sleep: {min: 100ms, max: 900ms}}, {text: ok}]}]
  - name: dribble
    replies: [{steps: [{dribble: {chunkBytes: 7, pause: 20ms}}, {text: in pieces}]}]
"""


def test_fixed_delay_is_a_sleep_before_the_answer():
    plan = plan_for(engine_for(TIMING), call(1, "fixed"))
    assert plan.actions[0] == Sleep(0.25) and not plan.immediate


def test_random_delay_is_in_range_and_reproducible_with_a_seed():
    def delays(seed: int) -> list[float]:
        conn = Connection(engine_for(TIMING, seed=seed))
        return [conn.receive_data(line(call(i, "random")))[0].actions[0].seconds for i in range(20)]

    a, b, c = delays(7), delays(7), delays(8)
    assert a == b and a != c
    assert all(0.1 <= d <= 0.9 for d in a)
    assert len(set(a)) > 10  # really random, not one value


def test_dribble_marks_the_rest_of_the_reply_for_chunked_writing(schema):
    plan = plan_for(engine_for(TIMING), call(1, "dribble"))
    assert plan.actions[0] == Dribble(7, 0.02)
    schema.check_line(plan.actions[1].data, "tools/call")


# ------------------------------------------------------------ silence and death

DEATH = """
mockmcp: 1
protocol: {exitAfter: {messages: 2, status: 9}}
tools:
  - name: stop_reading
    replies: [{steps: [{stopReading: 3s}, {text: stopped}]}]
  - name: stop_forever
    replies: [{steps: [{stopReading: forever}, {text: stopped}]}]
  - name: close
    replies: [{steps: [{closeStdout: true}, {hang: true}]}]
  - name: midline
    replies: [{steps: [{exit: {status: 4, partialBytes: 20}}]}]
  - name: before
    replies: [{steps: [{exit: {status: 5}}]}]
"""


def test_stop_reading_for_a_time_and_forever():
    engine = engine_for(DEATH)
    assert plan_for(engine, call(1, "stop_reading")).actions[0] == StopReading(3.0)
    assert plan_for(engine, call(2, "stop_forever")).actions[0] == StopReading(None)


def test_close_stdout_then_keep_running():
    plan = plan_for(engine_for(DEATH), call(1, "close"))
    assert plan.actions == [CloseStdout(), Park()]


def test_exit_mid_line_writes_a_prefix_of_the_real_answer():
    plan = plan_for(engine_for(DEATH), call(1, "midline"))
    (action,) = plan.actions
    assert action.status == 4 and len(action.partial) == 20
    assert action.partial == b'{"jsonrpc":"2.0","id":1,"result":{'[:20]


def test_exit_before_answering_and_exit_after_is_loaded():
    engine = engine_for(DEATH)
    assert plan_for(engine, call(1, "before")).actions == [Exit(5, b"")]
    assert (engine.protocol.exitAfter.messages, engine.protocol.exitAfter.status) == (2, 9)


def test_ignore_eof_and_sigterm_are_scenario_options():
    engine = engine_for("mockmcp: 1\nprotocol: {ignoreEof: true, ignoreSigterm: true}\n")
    assert engine.protocol.ignoreEof and engine.protocol.ignoreSigterm


def test_the_shell_honours_exit_after_and_ignore_eof_from_the_scenario():
    """The links set the shell up as ``mockmcp run`` does, so these options act in the tests too."""
    tools = "tools: [{name: t, replies: [{steps: [{text: ok}]}]}]\n"
    link = FakeLink(engine_for("mockmcp: 1\nprotocol: {exitAfter: {messages: 2, status: 9}}\n" + tools))
    assert [m["id"] for m in link.send(call(1, "t"), call(2, "t"), call(3, "t"))] == [1, 2]
    assert link.exits == [9]
    plain, ignoring = FakeLink(engine_for("mockmcp: 1\n" + tools)), FakeLink(engine_for("mockmcp: 1\nprotocol: {ignoreEof: true}\n" + tools))
    plain.eof(), ignoring.eof()
    assert plain.stopped and not ignoring.stopped


# ------------------------------------------------------------ lies on the wire (bundled `lies`)


def lie(name: str, rid: Any = 7, scenario: str = "lies") -> tuple[FakeLink, bytes]:
    """Call tool ``name`` and return everything written, raw (lies need not parse)."""
    link = FakeLink(bundled(scenario))
    link.feed(call(rid, name))
    return link, b"".join(link.written)


def test_malformed_json_line_then_the_result(schema):
    _, data = lie("malformed")
    bad, good, rest = data.split(b"\n")
    assert rest == b""
    with pytest.raises(ValueError):
        json.loads(bad)
    assert bad.startswith(b'{"jsonrpc": "2.0", "id": 7,')
    schema.check_line(good + b"\n", "tools/call")


def test_response_split_by_an_embedded_newline():
    link, data = lie("split")
    first, second, rest = data.split(b"\n")
    assert rest == b"" and 7 in link.open
    with pytest.raises(ValueError):
        json.loads(first)
    assert json.loads(first + second) == {"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "content": []}}


def test_non_json_noise_then_the_result(schema):
    _, data = lie("noise")
    noise, good, _ = data.split(b"\n")
    assert noise == b"INFO server ready on stdio"
    schema.check_line(good + b"\n", "tools/call")


def test_invalid_utf8():
    _, data = lie("bad_utf8")
    assert b"\xff\xfe" in data and data.endswith(b"\n")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")


@pytest.mark.parametrize("rid,wrong", [(7, "7"), ("a", "a")])
def test_wrong_id(rid, wrong):
    link, data = lie("wrong_id", rid)
    msg = json.loads(data)
    assert msg["id"] == wrong
    if rid == 7:
        assert msg["id"] != rid  # the request's own id, with the wrong type
    assert rid in link.open


def test_unknown_id_then_the_result(schema):
    _, data = lie("unknown_id")
    stray, good, _ = data.split(b"\n")
    assert json.loads(stray)["id"] == 987654321
    assert schema.check_line(good + b"\n", "tools/call")["id"] == 7


def test_duplicate_response(schema):
    _, data = lie("duplicate")
    a, b, _ = data.split(b"\n")
    for line in (a, b):
        assert schema.check_line(line + b"\n", "tools/call")["id"] == 7


def test_result_without_and_with_unknown_result_type():
    _, data = lie("no_result_type")
    assert "resultType" not in json.loads(data)["result"]
    _, data = lie("unknown_result_type")
    assert json.loads(data)["result"]["resultType"] == "partial"


def test_error_with_null_message_and_string_code(schema):
    _, data = lie("null_message")
    err = json.loads(data)["error"]
    assert err == {"code": -32603, "message": None}
    _, data = lie("string_code")
    assert json.loads(data)["error"]["code"] == "-32603"
    with pytest.raises(Exception):
        schema.check(json.loads(data))  # really a violation


def test_server_to_client_request_then_the_result(schema):
    _, data = lie("server_request")
    req, good, _ = data.split(b"\n")
    req = json.loads(req)
    assert req["method"] == "sampling/createMessage" and req["id"] == "mock-request-1"
    schema.check_line(good + b"\n", "tools/call")


def test_huge_result_has_the_size_given(schema):
    _, data = lie("huge")
    msg = schema.check_line(data, "tools/call")
    assert len(msg["result"]["content"][0]["text"]) == 1_000_000


def test_huge_sizes_multibyte_chars_in_bytes():
    engine = engine_for("mockmcp: 1\ntools: [{name: t, replies: [{steps: [{huge: {bytes: 10, char: 'é'}}]}]}]\n")
    (out,) = FakeLink(engine).send(call(1, "t"))
    assert out["result"]["content"][0]["text"].encode() == "é".encode() * 5


def test_stderr_flood_then_the_result(schema):
    link, data = lie("stderr_flood")
    assert len(link.stderr) == 20000
    schema.check_line(data, "tools/call")


def test_response_to_a_notification():
    link = FakeLink(bundled("lies"))
    (out,) = link.send({"jsonrpc": "2.0", "method": "notifications/poke", "params": {}})
    assert out["id"] is None and out["result"]["resultType"] == "complete"


def test_notifications_without_an_override_still_get_nothing():
    link = FakeLink(bundled("lies"))
    assert link.send({"jsonrpc": "2.0", "method": "notifications/other", "params": {}}) == []


def test_raw_bytes_is_written_exactly():
    engine = engine_for('mockmcp: 1\ntools: [{name: t, replies: [{steps: [{rawBytes: "a\\x00\\xffb"}, {hang: true}]}]}]\n')
    plan = plan_for(engine, call(1, "t"))
    assert plan.actions[0] == WriteRaw(b"a\x00\xffb")


def test_stderr_step_repeats():
    engine = engine_for("mockmcp: 1\ntools: [{name: t, replies: [{steps: [{stderr: x, repeat: 3}, {text: ok}]}]}]\n")
    assert plan_for(engine, call(1, "t")).actions[0] == Stderr("x", 3)


@pytest.mark.parametrize("name", ["faults", "lies", "legacy", "version-retry"])
def test_bundled_fault_scenarios_pass_check(name):
    from mockmcp.scenario.loader import load as load_file

    _, warnings = load_file(SCENARIOS / f"{name}.yaml", use_cache=False)
    assert warnings == []


def test_a_notification_rule_may_only_lie_and_replaces_the_builtin_handling():
    engine = engine_for(
        "mockmcp: 1\n"
        "tools: [{name: t, replies: [{steps: [{hang: true}]}]}]\n"
        "methods:\n"
        "  - method: notifications/cancelled\n"
        "    replies: [{steps: [{raw: {jsonrpc: '2.0', id: null, result: {resultType: complete}}}]}]\n"
    )
    link = FakeLink(engine)
    link.send(call(1, "t"))
    out = link.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert out == [{"jsonrpc": "2.0", "id": None, "result": {"resultType": "complete"}}]
    assert 1 in engine.session.in_flight  # the rule replaced the cancellation


# ------------------------------------------------------------ over the real shell (memory streams, virtual clock)

SHELL_YAML = """
mockmcp: 1
tools:
  - name: echo
    replies: [{steps: [{text: "{{ id }}"}]}]
  - name: pause
    replies: [{steps: [{stopReading: 30s}, {text: paused}]}]
  - name: close
    replies: [{steps: [{closeStdout: true}, {hang: true}]}]
  - name: dribble
    replies: [{steps: [{dribble: {chunkBytes: 5, pause: 1s}}, {text: pieces}]}]
"""


async def test_exit_after_counts_lines_across_batches_and_dribbles(schema, autojump_clock):
    h = Harness(engine_for(SHELL_YAML))
    h.shell.writer.exit_after = (3, 9)
    async with trio.open_nursery() as nursery:
        await h.start(nursery)
        await h.send(call(1, "echo"), call(2, "echo"))  # one batch of two lines
        await trio.sleep(1)
        await h.send(call(3, "dribble"))  # the 3rd line goes out in 5-byte pieces
        await trio.sleep(120)
        await h.send(call(4, "echo"))
        await trio.sleep(1)
        # the marker that the wait was long enough: the 4th request was read and answered
        assert h.engine.session.requests_seen == 4 and 4 not in h.engine.session.in_flight
        nursery.cancel_scope.cancel()
    assert h.exits == [9]
    assert [json.loads(raw)["id"] for _, raw in h.lines] == [1, 2, 3]  # nothing after the 3rd line
    h.check_all(schema)


async def test_stop_reading_holds_later_input_for_the_scripted_time(schema, autojump_clock):
    h = Harness(engine_for(SHELL_YAML))
    async with trio.open_nursery() as nursery:
        await h.start(nursery)
        await h.send(call(1, "pause"))
        assert (await h.next())["id"] == 1
        start = trio.current_time()
        await h.send(call(2, "echo"))
        assert (await h.next())["id"] == 2
        assert trio.current_time() - start == pytest.approx(30, abs=0.1)
        await h.eof()
    h.check_all(schema)


async def test_close_stdout_closes_the_stream_and_the_shell_keeps_reading(autojump_clock):
    h = Harness(engine_for(SHELL_YAML))
    closed: list[bool] = []
    h.shell.writer.close_stdout = lambda: closed.append(True)
    async with trio.open_nursery() as nursery:
        await h.start(nursery)
        await h.send(call(1, "close"))
        with pytest.raises(EOFError):
            await h.next()
        assert closed == [True]
        await h.send(call(2, "echo"))  # still read and answered, into the void
        await trio.sleep(1)
        assert h.engine.session.requests_seen == 2 and not h.done.is_set()
        await h.eof()
        await h.done.wait()
    assert h.lines == [] and h.exit_status == 0


@pytest.mark.parametrize(
    "yaml_text,message",
    [
        ("mockmcp: 1\nprotocol: {exitAfter: {messages: 0}}\n", "messages must be at least 1"),
        ("mockmcp: 1\ntools: [{name: t, replies: [{steps: [{huge: {bytes: -1}}]}]}]\n", "huge needs bytes >= 0"),
        ("mockmcp: 1\ntools: [{name: t, replies: [{steps: [{stopReading: sometimes}, {text: x}]}]}]\n", "invalid duration"),
    ],
)
def test_check_rejects_meaningless_fault_settings(yaml_text, message):
    from mockmcp.scenario.loader import load_text
    from mockmcp.scenario.problems import LoadError

    with pytest.raises(LoadError, match=message):
        load_text(yaml_text, "<t>")


def test_docs_faults_md_covers_every_fault():
    """docs/faults.md names every fault step and protocol option (so a new fault cannot go undocumented)."""
    from support.paths import ROOT

    doc = (ROOT / "docs" / "faults.md").read_text(encoding="utf-8")
    steps = ["sleep", "dribble", "hang", "stopReading", "exit", "closeStdout", "raw", "rawBytes", "huge", "stderr",
             "sequence", "setState", "emit"]
    options = ["exitAfter", "ignoreEof", "ignoreSigterm", "era", "discover", "rejectFirst", "versions"]
    targeting = ["nth", "every", "first", "after", "probability"]
    missing = [k for k in steps + options + targeting if f"`{k}" not in doc and f"{k}:" not in doc]
    assert missing == []
    for tool in ["hang", "crash", "garbage", "flaky", "slow", "bad_result"]:
        assert f"| `{tool}` |" in doc
