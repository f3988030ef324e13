"""The trio shell (``mockmcp.shells.stdio.Shell``) on memory streams with trio's autojump clock.

No process: the harness in ``shellharness.py`` wires a real ``Shell`` to
in-memory stdin/stdout and a fake ``exit_process``. Scripted delays cost no
wall time, and every line's virtual time is exact, so the tests can say
"the fast reply came first, at t=0" without timing flakiness.
"""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing
from support.messages import call, cancelled, listen, request
from support.engines import scenario_engine
from support.shellharness import Harness, response_to

SLOW_YAML = """
mockmcp: 1
tools:
  - name: slow
    replies: [{steps: [{sleep: 10s}, {text: slow}]}]
  - name: soon
    replies: [{steps: [{sleep: 500ms}, {text: soon}]}]
  - name: late
    replies: [{steps: [{sleep: 5s}, {text: late}]}]
  - name: fast
    replies: [{steps: [{text: fast}]}]
  - name: wait
    replies: [{steps: [{hang: true}]}]
  - name: die
    replies: [{steps: [{sleep: 1s}, {exit: {status: 3}}]}]
"""


async def started(nursery: trio.Nursery, scenario: str = SLOW_YAML, **kw: Any) -> Harness:
    return await Harness(scenario_engine(scenario), **kw).start(nursery)


def text_of(msg: dict[str, Any]) -> str:
    return msg["result"]["content"][0]["text"]


# ---------------------------------------------------------------- framing on a stream


async def test_input_split_in_the_middle_of_a_line(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        data = json.dumps(call(1, "fast")).encode() + b"\n"
        for i in range(0, len(data), 7):  # seven-byte chunks, split everywhere
            await h.send(data[i : i + 7])
            if i + 7 < len(data):
                assert await h.quiet_for(0.1) == []
        msg = await h.next()
        assert msg["id"] == 1 and text_of(msg) == "fast"
        await h.eof()
    h.check_all(schema)


async def test_two_lines_in_one_chunk_and_one_line_across_chunks(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        a, b = (json.dumps(call(i, "fast")).encode() + b"\n" for i in (1, 2))
        await h.send(a + b[:20])
        assert (await h.next())["id"] == 1
        await h.send(b[20:])
        assert (await h.next())["id"] == 2
        await h.eof()
    h.check_all(schema)


async def test_crlf_and_blank_lines(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        await h.send(b"\r\n\n   \n" + json.dumps(call(1, "fast")).encode() + b"\r\n\r\n" + json.dumps(call(2, "fast")).encode() + b"\r\n")
        got = [await h.next(), await h.next()]
        assert [m["id"] for m in got] == [1, 2]
        assert all("result" in m for m in got)
        await h.silent_for(1)  # blank lines got no answer
        await h.eof()
    h.check_all(schema)


async def test_last_line_without_newline_at_eof(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        await h.send(json.dumps(call(1, "fast")).encode())
        assert await h.quiet_for(0.5) == []
        await h.eof()
        assert (await h.next())["id"] == 1
    h.check_all(schema)


async def test_only_valid_json_lines_on_stdout(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        await h.send(b"nonsense\n", b"[]\n", b'{"jsonrpc":"2.0","id":null,"method":"x"}\n', b"\xff\xfe\n")
        await h.send(call(1, "fast"), request(2, "nope/nope"), {"jsonrpc": "2.0", "method": "notifications/x"})
        await h.send(call(3, "soon", text="é\n\u2028"))
        await h.until(response_to(3))
        await h.eof()
    assert len(h.lines) == 7  # 4 errors without id, a result, -32601, a result; nothing for the notification
    h.check_all(schema)
    assert [json.loads(raw).get("error", {}).get("code") for _, raw in h.lines] == [-32700, -32600, -32600, -32700, None, -32601, None]
    assert "Traceback" not in h.stderr_text()


# ---------------------------------------------------------------- concurrency


async def test_a_slow_reply_does_not_block_others(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        t0 = trio.current_time()
        await h.send(call(1, "slow"), call(2, "late"), call(3, "fast"), call(4, "soon"))
        order = []
        for _ in range(4):
            msg = await h.next()
            order.append((msg["id"], round(trio.current_time() - t0, 3)))
        assert order == [(3, 0.0), (4, 0.5), (2, 5.0), (1, 10.0)]
        await h.eof()
    h.check_all(schema)


async def test_a_hang_does_not_block_later_requests(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        await h.send(call(1, "wait"))
        assert await h.quiet_for(60) == []
        await h.send(call(2, "fast"))
        msg = await h.next()
        assert msg["id"] == 2  # the next line: the hang queued nothing and the stream is live
        # the hung request can still be cancelled by its id, and the id reused
        await h.send(cancelled(1), call(1, "fast"))
        msg = await h.next()
        assert msg["id"] == 1 and text_of(msg) == "fast"
        await h.eof()
    h.check_all(schema)


async def test_duplicate_in_flight_id_over_the_shell(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        t0 = trio.current_time()
        await h.send(call(1, "soon"), call(1, "fast"))
        dup = await h.next()
        assert dup["id"] == 1 and dup["error"]["code"] == -32600 and trio.current_time() == t0
        orig = await h.next()
        assert orig["id"] == 1 and text_of(orig) == "soon" and trio.current_time() - t0 == 0.5
        await h.eof()
    h.check_all(schema)


# ---------------------------------------------------------------- EOF


async def test_eof_grace_writes_replies_due_soon_then_returns(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        t0 = trio.current_time()
        await h.send(call(1, "soon"), call(2, "wait"))
        await h.eof()
        msg = await h.next()
        assert msg["id"] == 1 and text_of(msg) == "soon"
        await h.done.wait()
        # the hang did not delay the exit: serve returned as soon as the soon reply was out
        assert trio.current_time() - t0 == 0.5
    assert h.exit_status == 0
    assert [json.loads(raw)["id"] for _, raw in h.lines] == [1]
    h.check_all(schema)


async def test_eof_grace_is_bounded(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery, grace=1.0)
        t0 = trio.current_time()
        await h.send(call(1, "late"), call(2, "soon"))
        await h.eof()
        await h.done.wait()
        assert trio.current_time() - t0 == 0.5  # not 5 s, nor the 1 s grace: the late reply could not finish in it
    assert h.exit_status == 0
    assert [json.loads(raw)["id"] for _, raw in h.lines] == [2]
    h.check_all(schema)


async def test_eof_with_only_hangs_and_streams_exits_at_once(schema, autojump_clock):
    engine_yaml = SLOW_YAML + "resources: [{uri: 'mem://x', name: x, text: x}]\n"
    async with trio.open_nursery() as nursery:
        h = await started(nursery, engine_yaml)
        t0 = trio.current_time()
        await h.send(call(1, "wait"), listen(2, toolsListChanged=True))
        ack = await h.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        await h.eof()
        await h.done.wait()
        assert trio.current_time() == t0
    assert h.exit_status == 0
    h.check_all(schema)


async def test_eof_with_nothing_pending(autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        t0 = trio.current_time()
        await h.eof()
        await h.done.wait()
        assert trio.current_time() == t0 and h.exit_status == 0 and h.lines == []


async def test_scripted_exit_goes_through_exit_process(schema, autojump_clock):
    async with trio.open_nursery() as nursery:
        h = await started(nursery)
        t0 = trio.current_time()
        await h.send(call(1, "die"), call(2, "fast"))
        assert (await h.next())["id"] == 2
        while not h.exits:
            await trio.sleep(0.01)
        assert h.exits == [3]
        assert 1.0 <= trio.current_time() - t0 <= 1.02
        nursery.cancel_scope.cancel()  # a real process would be gone; the fake one is stopped here
    h.check_all(schema)


class _GoneReader(trio.abc.SendStream):
    """stdout whose reader has gone away (the client closed its end of the pipe)."""

    def __init__(self) -> None:
        self.attempts = 0

    async def send_all(self, data: Any) -> None:
        self.attempts += 1
        raise trio.BrokenResourceError("reader gone")

    async def wait_send_all_might_not_block(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_stdout_closed_by_the_client_is_not_fatal(autojump_clock):
    from mockmcp.core.connection import Connection
    from mockmcp.shells.stdio import Shell, StderrLog

    stdin_send, stdin_recv = trio.testing.memory_stream_one_way_pair()
    stdout = _GoneReader()
    logs: list[bytes] = []
    exits: list[int] = []
    shell = Shell(Connection(scenario_engine(SLOW_YAML)), stdin_recv, stdout, log=StderrLog("info", write=logs.append), exit_process=exits.append)
    async with trio.open_nursery() as nursery:
        result: list[int] = []

        async def serve() -> None:
            result.append(await shell.serve())

        nursery.start_soon(serve)
        await stdin_send.send_all(json.dumps(call(1, "fast")).encode() + b"\n" + json.dumps(call(2, "soon")).encode() + b"\n")
        await trio.sleep(1)
        await stdin_send.aclose()
    assert result == [0] and exits == []
    assert stdout.attempts == 1  # silence after the first failure
    assert b"stdout closed by the client" in b"".join(logs)
