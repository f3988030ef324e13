"""The control shell in virtual time: the real ``ControlServer`` client loop and the real ``Shell``
in one trio run on the autojump clock (a socketpair stands for the control socket, memory
streams for stdin/stdout), so waits of a minute and timed pauses cost no wall time and the
moments things happen are exact.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import trio
import trio.testing
from support.messages import call, listen
from support.engines import engine_for
from support.shellharness import Harness, response_to

from mockmcp.scenario import fragments
from mockmcp.core.control import Control
from mockmcp.shells.control import ControlServer

SCENARIO = """\
mockmcp: 1
tools:
  - name: greet
    replies:
      - steps: [{text: "hello {{ arguments.who }}"}]
"""


class ControlLink:
    """One control client on a socketpair, served by the real ``ControlServer._client``."""

    def __init__(self, harness: Harness, control: Control) -> None:
        self.control = control
        harness.shell.conn.observers.append(self.control.inbound)
        self.server = ControlServer("/nonexistent/unused.sock", self.control, harness.shell)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        theirs.setblocking(False)
        self.theirs = theirs
        self.sock = trio.socket.from_stdlib_socket(ours)
        self.buffer = b""
        self.ids = 0

    async def start(self, nursery: trio.Nursery) -> ControlLink:
        nursery.start_soon(self.server._client, self.theirs)
        return self

    async def send(self, method: str, **params: Any) -> int:
        self.ids += 1
        await self.sock.send((json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}) + "\n").encode())
        return self.ids

    async def answer(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self.buffer += await self.sock.recv(65536)
        line, self.buffer = self.buffer.split(b"\n", 1)
        out: dict[str, Any] = json.loads(line)
        return out


async def rig(nursery: trio.Nursery) -> tuple[Harness, ControlLink]:
    engine = engine_for(SCENARIO)
    control = Control(engine, fragments)
    harness = Harness(engine, on_data=control.outbound)  # the journal's tap, from the shell's first line
    link = ControlLink(harness, control)
    await harness.start(nursery)
    await link.start(nursery)
    return harness, link


async def test_a_timed_pause_resumes_by_itself(autojump_clock):
    async with trio.open_nursery() as nursery:
        h, link = await rig(nursery)
        await link.send("pause", seconds=30)
        assert (await link.answer())["result"] == {}
        start = trio.current_time()
        await h.send(call(1, "greet", who="a"))
        with trio.fail_after(100):  # virtual: a pause that never ends fails here
            (answer,) = await h.until(response_to(1))
        assert 30 <= trio.current_time() - start < 30.1  # read again only when the pause ended
        assert answer["result"]["content"][0]["text"] == "hello a"
        nursery.cancel_scope.cancel()


async def test_a_wait_times_out_at_its_deadline_with_the_closest_request(autojump_clock):
    async with trio.open_nursery() as nursery:
        h, link = await rig(nursery)
        start = trio.current_time()
        await link.send("waitFor", when={"method": "tools/call", "arguments": {"who": "bob"}}, timeout=60)
        await trio.sleep(1)
        await h.send(call(1, "greet", who="amy"))
        await h.until(response_to(1))
        with trio.fail_after(100):
            answer = await link.answer()
        assert abs(trio.current_time() - start - 60) < 0.1
        assert answer["error"]["code"] == -32008
        assert answer["error"]["data"]["nearMiss"]["id"] == 1
        nursery.cancel_scope.cancel()


async def test_a_client_keeps_operating_while_its_wait_is_parked(autojump_clock):
    async with trio.open_nursery() as nursery:
        h, link = await rig(nursery)
        await h.send(listen(1, toolsListChanged=True))
        await h.next()  # the ack
        waited = await link.send("waitFor", when={"method": "tools/call"}, timeout=600)
        emitted = await link.send("emit", event="tools/list_changed")
        answer = await link.answer()
        assert answer["id"] == emitted and answer["result"] == {"delivered": 1}
        assert (await h.next())["method"] == "notifications/tools/list_changed"
        await trio.sleep(300)
        await h.send(call(2, "greet", who="z"))
        with trio.fail_after(10):  # well before the wait's own timeout
            answer = await link.answer()
        assert answer["id"] == waited and answer["result"]["message"]["id"] == 2
        nursery.cancel_scope.cancel()


async def test_graceful_shutdown_ends_the_shell_as_at_eof(autojump_clock):
    async with trio.open_nursery() as nursery:
        h, link = await rig(nursery)
        await link.send("shutdown")
        assert (await link.answer())["result"] == {"mode": "graceful", "status": 0}
        with trio.fail_after(5):
            await h.done.wait()
        assert h.exit_status == 0
        nursery.cancel_scope.cancel()


async def test_a_pause_in_the_instant_the_reader_is_woken_holds_that_chunk_until_the_resume(autojump_clock):
    # The reader waits in its read; a chunk arrives (the reader is rescheduled with it, but has
    # not run) and the control channel pauses in that same instant. The read cannot be
    # cancelled any more (it already has the bytes): the chunk must be held, neither handled
    # during the pause nor lost.
    async with trio.open_nursery() as nursery:
        h, _ = await rig(nursery)
        await trio.testing.wait_all_tasks_blocked()
        await h.send(call(1, "greet", who="held"))  # (memory streams: no checkpoint after the hand-over)
        h.shell.pause_reading(None)
        assert await h.quiet_for(60) == []  # not handled while paused
        h.shell.resume_reading()
        with trio.fail_after(5):
            (answer,) = await h.until(response_to(1))
        assert answer["result"]["content"][0]["text"] == "hello held"
        await h.silent_for(1)  # answered once, and the stream goes on
        nursery.cancel_scope.cancel()


async def test_a_stop_while_the_reader_waits_ends_the_shell_without_more_input(autojump_clock):
    async with trio.open_nursery() as nursery:
        h, _ = await rig(nursery)
        await h.send(call(1, "greet", who="a"))
        await h.until(response_to(1))
        await trio.testing.wait_all_tasks_blocked()  # waiting in a read that nothing will end
        h.shell.stop()
        with trio.fail_after(5):
            await h.done.wait()
        assert h.exit_status == 0
        nursery.cancel_scope.cancel()


async def test_a_request_read_while_its_wait_is_being_parked_answers_the_wait_at_once(autojump_clock):
    # The awaited request is read in the instant after the core registered the wait and before
    # the shell parked it (parking yields to other tasks: the wait's slot). The match must still
    # wake the wait, not leave it to find the match at its timeout (what a clean-clone CI run
    # once saw as a waiter thread with no answer: its join ended with the wait's timeout).
    for k in range(10):  # (trio runs a batch's tasks in a random order: the reader first in most)
        async with trio.open_nursery() as nursery:
            h, link = await rig(nursery)
            handle = link.control.handle_line

            def then_the_request_arrives(line: Any, h: Harness = h, handle: Any = handle, k: int = k) -> Any:
                outcome = handle(line)
                if outcome.waiter is not None:  # the reader, parked in its read, can take it at the next yield
                    h.shell.stdin.put_data((json.dumps(call(k, "greet", who="now")) + "\n").encode())  # type: ignore[attr-defined]
                return outcome

            link.control.handle_line = then_the_request_arrives  # type: ignore[method-assign]
            await trio.testing.wait_all_tasks_blocked()  # the reader waits in its read
            waited = await link.send("waitFor", when={"method": "tools/call"}, timeout=60)
            start = trio.current_time()
            with trio.fail_after(100):
                answer = await link.answer()
            assert answer["id"] == waited and answer["result"]["message"]["id"] == k
            assert trio.current_time() - start < 1, f"try {k}: the wait slept until its timeout"
            nursery.cancel_scope.cancel()


async def test_a_batch_of_control_lines_lets_the_mcp_stream_in_after_each_line(autojump_clock):
    # Twenty pings in one write; the MCP request arrives while the first is handled. Each ping
    # answers the journal's position, which the request (read, then answered) moves on: the
    # request must be read within a line or two of the batch, not after all of it.
    async with trio.open_nursery() as nursery:
        h, link = await rig(nursery)
        handle = link.control.handle_line
        sent = []

        def first_line_brings_the_request(line: Any) -> Any:
            if not sent:
                sent.append(line)
                h.shell.stdin.put_data((json.dumps(call(1, "greet", who="x")) + "\n").encode())  # type: ignore[attr-defined]
            return handle(line)

        link.control.handle_line = first_line_brings_the_request  # type: ignore[method-assign]
        await trio.testing.wait_all_tasks_blocked()
        batch = b"".join((json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}) + "\n").encode() for n in range(20))
        await link.sock.send(batch)
        positions = [(await link.answer())["result"]["position"] for _ in range(20)]
        before = positions.count(positions[0])
        assert before <= 2 and positions[-1] > positions[0], positions
        nursery.cancel_scope.cancel()
