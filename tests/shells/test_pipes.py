"""``mockmcp.shells.pipes``: the stdin/stdout streams of ``mockmcp run`` on real pipes (``os.pipe``).

The streams skip the loop turns trio's ``FdStream`` takes; what they must keep
is what those turns gave: a read that found data still lets the other tasks run
(fairness) and never loses its chunk to a cancel; a full pipe still pushes back
on the writer; a cancel is still noticed before the pipe is touched; closing
still restores the descriptor and wakes whoever waits on it. Each test below
names the property and fails if ``pipes.py`` loses it. The last test drives a
real ``mockmcp run`` process, whose stdio is these streams.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio
import trio.testing
from support.process import mockmcp_cmd
from support.messages import call, line

from mockmcp.shells.pipes import PipeReceiveStream, PipeSendStream
from mockmcp.shells.writer import SafeOut

MiB = 1 << 20


@contextmanager
def pipe() -> Iterator[tuple[int, int]]:
    """An ``os.pipe()`` whose ends are closed afterwards unless a stream closed them already."""
    r, w = os.pipe()
    try:
        yield r, w
    finally:
        for fd in (r, w):
            try:
                os.close(fd)
            except OSError as exc:
                assert exc.errno == errno.EBADF


def pending(fd: int) -> bytes:
    """Everything the pipe holds now, read without waiting (b"" when empty)."""
    was = os.get_blocking(fd)
    os.set_blocking(fd, False)
    got = b""
    try:
        while True:
            got += os.read(fd, MiB)
    except BlockingIOError:
        return got
    finally:
        os.set_blocking(fd, was)


def unread(fd: int) -> int:
    """How many bytes the pipe holds, without taking them (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]  # type: ignore[no-any-return]


def pattern(n: int) -> bytes:
    """``n`` bytes whose order is checkable (a repeat of a 251-byte cycle, prime so no chunk aligns)."""
    cycle = bytes(range(251))
    return (cycle * (n // 251 + 1))[:n]


# ---------------------------------------------------------------- 1. round trip and EOF


async def test_receive_returns_what_was_written_at_once_or_after_parking_and_eof_is_empty():
    with pipe() as (r, w):
        stdin = PipeReceiveStream(r)
        os.write(w, b"first")
        assert await stdin.receive_some() == b"first"  # data already there: no wait
        os.write(w, b"abcdef")
        assert await stdin.receive_some(4) == b"abcd"  # max_bytes is honoured
        assert await stdin.receive_some() == b"ef"
        got: list[bytes] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _append(got, stdin.receive_some()))
            await trio.testing.wait_all_tasks_blocked()
            assert got == []  # an empty pipe parks the reader ...
            os.write(w, b"late")  # ... until data arrives
        assert got == [b"late"]
        os.close(w)
        assert await stdin.receive_some() == b""  # the write end closed: EOF
        await stdin.aclose()


async def test_an_empty_pipe_gets_one_loop_turn_and_a_second_read_before_the_reader_parks(monkeypatch):
    """A line that lands just after the reader found the pipe empty is read without parking (no
    epoll registration, no blocking wait): the ping-pong client's usual timing. Nothing by the
    second read: the reader parks, once."""
    parks = 0
    real_wait_readable = trio.lowlevel.wait_readable

    async def counting_wait_readable(fd: int) -> None:
        nonlocal parks
        parks += 1
        await real_wait_readable(fd)

    monkeypatch.setattr(trio.lowlevel, "wait_readable", counting_wait_readable)
    with pipe() as (r, w):
        real_read = os.read
        arriving: list[bytes] = []

        def read_then_the_client_writes(fd: int, n: int) -> bytes:
            try:
                return real_read(fd, n)
            except BlockingIOError:
                if fd == r and arriving:
                    os.write(w, arriving.pop())  # the client's next line, just too late for this read
                raise

        monkeypatch.setattr(os, "read", read_then_the_client_writes)
        stdin = PipeReceiveStream(r)
        arriving.append(b"soon")
        assert await stdin.receive_some() == b"soon"
        assert parks == 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write_later, w, b"late")
            assert await stdin.receive_some() == b"late"
        assert parks == 1
        await stdin.aclose()


async def _append(into: list[bytes], coro: Any) -> None:
    into.append(await coro)


async def test_send_writes_the_bytes_and_a_receive_stream_reads_them_back():
    with pipe() as (r, w):
        stdout, stdin = PipeSendStream(w), PipeReceiveStream(r)
        await stdout.send_all(b"one\n")
        await stdout.send_all(bytearray(b"two\n"))
        await stdout.send_all(memoryview(b"xthree\n")[1:])
        await stdout.aclose()
        got = b""
        with trio.fail_after(5):  # (EOF only comes if aclose closed the write end)
            while chunk := await stdin.receive_some():
                got += chunk
        assert got == b"one\ntwo\nthree\n"
        await stdin.aclose()


# ---------------------------------------------------------------- 2. a full pipe


async def test_a_send_larger_than_the_pipe_blocks_until_drained_and_every_byte_arrives_in_order():
    data = pattern(4 * MiB)
    with pipe() as (r, w):
        capacity = fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
        assert capacity < len(data)
        stdout, stdin = PipeSendStream(w), PipeReceiveStream(r)
        done = trio.Event()

        async def send() -> None:
            await stdout.send_all(data)
            done.set()

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(send)
                await trio.testing.wait_all_tasks_blocked()
                # Nobody reads: the sender waits (back-pressure), for real time too, not just unscheduled.
                assert not done.is_set()
                with trio.move_on_after(0.05):
                    await done.wait()
                assert not done.is_set()
                assert 0 < unread(r) <= capacity  # it filled the pipe (a partial write) and wrote no more
                got = bytearray()
                while len(got) < len(data):
                    got += await stdin.receive_some()
        assert done.is_set() and bytes(got) == data
        await stdout.aclose()
        await stdin.aclose()


async def test_a_send_cancelled_on_a_full_pipe_raises_cancelled_with_only_a_prefix_written():
    data = pattern(MiB)
    with pipe() as (r, w):
        stdout = PipeSendStream(w)
        with trio.move_on_after(0.05) as scope:
            await stdout.send_all(data)
        assert scope.cancelled_caught
        held = pending(r)
        assert 0 < len(held) < len(data) and held == data[: len(held)]
        await stdout.aclose()


async def test_wait_send_all_might_not_block_waits_only_while_the_pipe_is_full():
    with pipe() as (r, w):
        stdout = PipeSendStream(w)
        with trio.fail_after(5):
            await stdout.wait_send_all_might_not_block()  # empty pipe: returns at once
            with trio.move_on_after(0.05) as scope:
                await stdout.send_all(pattern(MiB))  # fills the pipe, then cancelled
            assert scope.cancelled_caught
            with trio.move_on_after(0.05) as scope:
                await stdout.wait_send_all_might_not_block()
            assert scope.cancelled_caught  # full: it waits
            pending(r)
            await stdout.wait_send_all_might_not_block()  # drained: returns
        await stdout.aclose()


async def test_a_reader_woken_for_bytes_another_reader_took_keeps_waiting():
    """Two streams on one pipe (dups) both wake for one byte; the loser waits again, not a false EOF."""
    with pipe() as (r, w):
        first, second = PipeReceiveStream(os.dup(r)), PipeReceiveStream(os.dup(r))
        got: list[bytes] = []
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: _append(got, first.receive_some()))
                nursery.start_soon(lambda: _append(got, second.receive_some()))
                await trio.testing.wait_all_tasks_blocked()
                os.write(w, b"1")
                await trio.testing.wait_all_tasks_blocked()
                assert got == [b"1"]  # one took it; the other is parked again
                os.write(w, b"2")
        assert got == [b"1", b"2"]
        await first.aclose()
        await second.aclose()


# ---------------------------------------------------------------- 3. fairness


async def test_a_reader_that_always_finds_data_still_lets_other_tasks_run():
    """Reads that never wait yield once per ``yield_every`` bytes: a ticker advances with the
    reader (not only after it), and small reads below the budget cost no turn each."""
    n, budget = 2000, 100
    with pipe() as (r, w):
        os.write(w, b"x" * n)  # always data: receive_some never has to wait
        stdin = PipeReceiveStream(r, yield_every=budget)
        ticks = 0
        ticks_when_done = -1

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await trio.lowlevel.checkpoint()
                ticks += 1

        async def reader() -> None:
            nonlocal ticks_when_done
            for _ in range(n):
                assert await stdin.receive_some(1) == b"x"
            ticks_when_done = ticks

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            await reader()
            nursery.cancel_scope.cancel()
        # One tick per budget of bytes, give or take the start: without the yield the ticker
        # would see none; with a yield per read it would see one per read.
        assert n // budget - 2 <= ticks_when_done <= n // budget + 2, ticks_when_done
        await stdin.aclose()


async def test_a_reader_that_waited_starts_a_new_budget():
    """Waiting for data lets every other task run, so the count of unyielded bytes starts again."""
    with pipe() as (r, w):
        stdin = PipeReceiveStream(r, yield_every=10)
        turns = 0

        async def ticker() -> None:
            nonlocal turns
            while True:
                await trio.lowlevel.checkpoint()
                turns += 1

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker)
            os.write(w, b"123456789")
            assert await stdin.receive_some() == b"123456789"  # 9 bytes: under the budget, no yield
            nursery.start_soon(_write_later, w, b"ab")
            assert await stdin.receive_some() == b"ab"  # waited: the budget restarts at 0
            before = turns
            os.write(w, b"cdefghij")
            assert await stdin.receive_some() == b"cdefghij"  # 8 more: still under 10, no yield
            assert turns == before
            nursery.cancel_scope.cancel()
        await stdin.aclose()


async def _write_later(fd: int, data: bytes) -> None:
    await trio.sleep(0.01)
    os.write(fd, data)


# ---------------------------------------------------------------- 4. cancellation never loses a chunk


async def test_a_cancel_arriving_just_after_a_read_took_data_returns_the_data():
    with pipe() as (r, w):
        os.write(w, b"precious")
        stdin = PipeReceiveStream(r)
        entered = False
        got: bytes | None = None
        scope = trio.CancelScope()

        async def read() -> None:
            nonlocal entered, got
            with scope:
                entered = True
                got = await stdin.receive_some()

        async def cancel_while_it_yields() -> None:
            while not entered:  # the reader's first yield after `entered` is the one after its read
                await trio.lowlevel.checkpoint()
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_while_it_yields)
            nursery.start_soon(read)
        assert scope.cancel_called
        assert got == b"precious" and pending(r) == b""
        await stdin.aclose()


async def test_a_cancel_while_parked_raises_cancelled_and_consumes_nothing():
    with pipe() as (r, w):
        stdin = PipeReceiveStream(r)
        outcome: list[str] = []
        scope = trio.CancelScope()

        async def read() -> None:
            with scope:
                try:
                    await stdin.receive_some()
                except trio.Cancelled:
                    outcome.append("cancelled")
                    raise
                outcome.append("returned")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            await trio.testing.wait_all_tasks_blocked()
            # Data arrives and the cancel comes before the reader runs again: the cancel wins,
            # and the bytes stay in the pipe for the next read.
            os.write(w, b"kept")
            scope.cancel()
        assert outcome == ["cancelled"]
        with trio.fail_after(5):  # (a read that lost the bytes would park here for ever)
            assert await stdin.receive_some() == b"kept"
        await stdin.aclose()


async def test_a_receive_in_a_cancelled_scope_raises_before_reading():
    with pipe() as (r, w):
        os.write(w, b"untouched")
        stdin = PipeReceiveStream(r)
        with trio.CancelScope() as scope:
            scope.cancel()
            await stdin.receive_some()
        assert scope.cancelled_caught
        assert await stdin.receive_some() == b"untouched"
        await stdin.aclose()


async def test_a_send_in_a_cancelled_scope_raises_before_writing():
    with pipe() as (r, w):
        stdout = PipeSendStream(w)
        with trio.CancelScope() as scope:
            scope.cancel()
            await stdout.send_all(b"never")
        assert scope.cancelled_caught
        assert pending(r) == b""
        await stdout.aclose()


# ---------------------------------------------------------------- 5. closed streams


async def test_closed_streams_refuse_io_and_close_twice_quietly():
    with pipe() as (r, w):
        stdin, stdout = PipeReceiveStream(os.dup(r)), PipeSendStream(os.dup(w))
        await stdin.aclose()
        await stdout.aclose()
        await stdin.aclose()
        await stdout.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await stdin.receive_some()
        with pytest.raises(trio.ClosedResourceError):
            await stdout.send_all(b"x")
        with pytest.raises(trio.ClosedResourceError):
            await stdout.wait_send_all_might_not_block()


async def test_closing_wakes_a_parked_reader_and_a_parked_writer_with_closed_resource_error():
    with pipe() as (r, _), pipe() as (_, w):  # two pipes: the reader's stays empty, the writer's fills
        stdin, stdout = PipeReceiveStream(os.dup(r)), PipeSendStream(os.dup(w))
        seen: list[str] = []

        async def expect_closed(coro: Any, name: str) -> None:
            with pytest.raises(trio.ClosedResourceError):
                await coro
            seen.append(name)

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(expect_closed, stdin.receive_some(), "reader")  # empty pipe
                nursery.start_soon(expect_closed, stdout.send_all(pattern(MiB)), "writer")  # fills it
                await trio.testing.wait_all_tasks_blocked()
                assert seen == []
                await stdin.aclose()
                await stdout.aclose()
        assert sorted(seen) == ["reader", "writer"]


@pytest.mark.parametrize("blocking", [True, False])
async def test_closing_restores_the_descriptions_blocking_mode(blocking):
    """O_NONBLOCK lives on the open file description, which a dup shares: the original fd sees it."""
    with pipe() as (r, w):
        for fd in (r, w):
            os.set_blocking(fd, blocking)
        stdin, stdout = PipeReceiveStream(os.dup(r)), PipeSendStream(os.dup(w))
        assert not os.get_blocking(r) and not os.get_blocking(w)  # non-blocking while the streams live
        await stdin.aclose()
        await stdout.aclose()
        assert os.get_blocking(r) is blocking and os.get_blocking(w) is blocking


async def test_closing_closes_the_descriptor_it_was_given():
    with pipe() as (r, w):
        stdout = PipeSendStream(os.dup(w))
        os.close(w)
        await stdout.aclose()  # the last write end goes: the reader sees EOF (not "no data yet")
        os.set_blocking(r, False)
        assert os.read(r, 10) == b""


# ---------------------------------------------------------------- 6. a broken pipe


async def test_a_send_to_a_pipe_without_reader_raises_broken_resource_error():
    with pipe() as (r, w):
        stdout = PipeSendStream(w)
        os.close(r)
        with pytest.raises(trio.BrokenResourceError):
            await stdout.send_all(b"nobody listens")
        await stdout.aclose()


async def test_a_reader_gone_while_the_send_waits_on_a_full_pipe_raises_broken_resource_error():
    with pipe() as (r, w):
        stdout = PipeSendStream(w)
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:

                async def send() -> None:
                    with pytest.raises(trio.BrokenResourceError):
                        await stdout.send_all(pattern(MiB))

                nursery.start_soon(send)
                await trio.testing.wait_all_tasks_blocked()
                os.close(r)
        await stdout.aclose()


async def test_safeout_turns_a_broken_pipe_into_silence():
    logged: list[tuple[str, str]] = []
    with pipe() as (r, w):
        out = SafeOut(PipeSendStream(w), lambda level, text: logged.append((level, text)))  # type: ignore[arg-type]
        await out.send_all(b"before\n")
        assert os.read(r, 100) == b"before\n"
        os.close(r)
        await out.send_all(b"after\n")  # raises nothing
        await out.send_all(b"and more\n")
        assert out.broken and len(logged) == 1 and "closed by the client" in logged[0][1]
        await out.stream.aclose()


# ---------------------------------------------------------------- 7. the real process


def _echoes(text: bytes, ids: range) -> bytes:
    return b"".join(line(call(i, "echo", text=f"{text.decode()}-{i}")) for i in ids)


def test_the_real_process_answers_ping_pong_then_a_pipelined_flood_it_must_push_back_on():
    """``mockmcp run`` on pipes: 200 strict round trips, then 2,000 requests (4 MB each way) written
    by a thread while nobody reads: the mock's stdout fills, the writes stall, and once the client
    reads every request is answered exactly once with its own text."""
    proc = subprocess.Popen(mockmcp_cmd("run", "default"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        reader = proc.stdout
        lines = iter(_lines(reader))
        for i in range(200):
            proc.stdin.write(line(call(i, "echo", text=f"ping-{i}")))
            msg = json.loads(next(lines))
            assert msg["id"] == i and msg["result"]["content"][0]["text"] == f"ping-{i}"

        n = 2000
        pad = b"p" * 2000
        ids = range(1000, 1000 + n)
        batches = [_echoes(pad, ids[k : k + 10]) for k in range(0, n, 10)]
        written = [0]

        def write_all() -> None:
            assert proc.stdin is not None
            for batch in batches:
                proc.stdin.write(batch)
                written[0] += 10
            proc.stdin.close()

        th = threading.Thread(target=write_all, daemon=True)
        th.start()
        # Wait for the writes to stall (nobody reads the mock's stdout), with a bound.
        deadline, last = time.monotonic() + 20, -1
        while written[0] != last and time.monotonic() < deadline:
            last = written[0]
            time.sleep(0.3)
        assert written[0] < n // 2, f"{written[0]} requests went in although nobody read the answers"
        seen: dict[Any, str] = {}
        for raw in lines:
            msg = json.loads(raw)
            assert msg["id"] not in seen, f"answered twice: {msg['id']}"
            seen[msg["id"]] = msg["result"]["content"][0]["text"]
        th.join(10)
        assert written[0] == n
        assert seen == {i: f"{pad.decode()}-{i}" for i in ids}
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert b"Traceback" not in err, err[-2000:]


def _lines(stream: Any) -> Iterator[bytes]:
    buf = b""
    fd = stream.fileno()
    while True:
        chunk = os.read(fd, MiB)
        if not chunk:
            assert buf == b"", buf[-200:]
            return
        buf += chunk
        *complete, buf = buf.split(b"\n")
        yield from complete


async def test_a_stream_dropped_without_aclose_gives_the_descriptor_back_as_it_was():
    """What the end of ``trio.run`` does to the shell's streams: their fds are restored and closed."""
    import gc

    with pipe() as (r, w):
        stdout = PipeSendStream(os.dup(w))
        assert not os.get_blocking(w)
        del stdout
        gc.collect()
        assert os.get_blocking(w)


def test_the_process_leaves_its_callers_pipes_blocking_after_it_exits():
    """O_NONBLOCK is shared with the caller's ends of the pipes (and a terminal): a mock that left
    it set would make the caller's own reads and writes fail with EAGAIN after it exited."""
    r, w = os.pipe()
    r2, w2 = os.pipe()
    try:
        proc = subprocess.Popen(mockmcp_cmd("run", "default"), stdin=r, stdout=w2, stderr=subprocess.DEVNULL)
        os.write(w, line(call(1, "echo", text="once")))
        os.close(w)
        w = -1
        assert proc.wait(30) == 0
        assert b'"once"' in os.read(r2, 65536)
        assert os.get_blocking(r) and os.get_blocking(w2)
    finally:
        for fd in (r, w, r2, w2):
            if fd >= 0:
                os.close(fd)
