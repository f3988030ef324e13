"""The one writer of stdout: lines never interleave, and a full pipe pushes back on the reader.

Everything the shell writes goes through ``StdoutWriter``: plan tasks ``send``
encoded lines (or jobs: a dribbled message, a scripted exit or close) into a
small bounded channel that one task drains in batches; the reader's immediate
answers take a shortcut straight to stdout (``flush``) when nothing is queued
before them. ``protocol.exitAfter`` is counted here, where lines are written.
A client that closed its end turns into silence (``SafeOut``), not an error.
"""

from __future__ import annotations

from typing import Any, Callable

import trio

from mockmcp.shells.log import StderrLog


class DribbleJob:
    """One message written in chunks with pauses (no other line can interleave)."""

    __slots__ = ("data", "chunk", "pause")

    def __init__(self, data: bytes, chunk: int, pause: float) -> None:
        self.data, self.chunk, self.pause = data, chunk, pause


class ExitJob:
    """Exit the process, in order, after what was queued before it."""

    __slots__ = ("status",)

    def __init__(self, status: int) -> None:
        self.status = status


class CloseJob:
    """Close stdout in order, after what was queued before it."""


Job = bytes | DribbleJob | ExitJob | CloseJob


class SafeOut:
    """stdout that turns a reader gone away into silence (the client closed the pipe); a stdout that
    refused a write for another reason (a file on a full disk) is the same end, logged as an error."""

    def __init__(self, stream: trio.abc.SendStream, log: StderrLog) -> None:
        self.stream = stream
        self.log = log
        self.broken = False

    async def send_all(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, BrokenPipeError) as exc:
            self.broken = True
            cause = exc.__cause__ if isinstance(exc, trio.BrokenResourceError) else None
            if isinstance(cause, OSError) and not isinstance(cause, BrokenPipeError):  # a full disk, EIO: no client's doing
                self.log("error", f"stdout refused a write ({cause.strerror or cause}); dropping further output")
            else:
                self.log("info", "stdout closed by the client; dropping further output")


class StdoutWriter:
    def __init__(
        self,
        stdout: trio.abc.SendStream,
        log: StderrLog,
        exit_process: Callable[[int], Any],
        *,
        exit_after: tuple[int, int] | None = None,
        close_stdout: Callable[[], Any] | None = None,
    ) -> None:
        self.stdout = stdout
        self.log = log
        self.exit_process = exit_process
        self.exit_after = exit_after  # (lines, status): die once that many lines went out
        self.close_stdout = close_stdout  # the process-level part of closing stdout (launch.run)
        self.lines_written = 0
        # Small: each item can be a whole batch of answers, and a full channel is what stops
        # the reader when the client does not read (back-pressure, bounded memory).
        self._send, self._receive = trio.open_memory_channel[Job](16)
        self._out = SafeOut(stdout, log)
        # flush() is writing stdout right now (the writer task waits for _flushed before its batch).
        self._flushing = False
        self._flushed: trio.Event | None = None
        # Jobs queued and not yet written out by the writer task: 0 means it holds nothing
        # (parked in receive, or about to be), so flush() may write ahead of nobody.
        self._pending = 0
        self._idle: trio.Event | None = None  # set when _pending drops to 0 (written() waits on it)

    async def send(self, job: Job) -> None:
        """Queue bytes or a job behind everything queued before (blocks while the channel is full)."""
        self._pending += 1
        try:
            await self._send.send(job)
        except BaseException:
            self._pending -= 1  # (not queued after all: cancelled while the channel was full)
            raise

    async def aclose(self) -> None:
        await self._send.aclose()

    async def written(self) -> None:
        """Return once everything queued so far is written out: a session about to be cancelled
        (the proxy's server exited) waits here first, or the last bytes queued would be lost. The
        caller bounds the wait (a client that does not read holds the writer forever)."""
        while self._pending:
            if self._idle is None:
                self._idle = trio.Event()
            await self._idle.wait()

    async def run(self) -> None:
        """The writer task: drain the channel in batches until it is closed."""
        stdout = self._out
        async with self._receive:
            async for item in self._receive:
                batch = [item]
                while len(batch) < 512:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                while self._flushing:  # the reader is writing older output straight to stdout
                    if self._flushed is None:
                        self._flushed = trio.Event()
                    await self._flushed.wait()
                pending: list[bytes] = []
                for job in batch:
                    if isinstance(job, bytes):
                        pending.append(job)
                        continue
                    if pending:
                        await self._write(b"".join(pending))
                        pending = []
                    await self._run_job(job, stdout)
                if pending:
                    await self._write(b"".join(pending))
                self._pending -= len(batch)
                if not self._pending and self._idle is not None:
                    self._idle.set()
                    self._idle = None

    async def _run_job(self, job: DribbleJob | ExitJob | CloseJob, stdout: SafeOut) -> None:
        match job:
            case DribbleJob():
                for i in range(0, len(job.data), job.chunk):
                    await self._write(job.data[i : i + job.chunk])
                    if i + job.chunk < len(job.data):
                        await trio.sleep(job.pause)
            case ExitJob():
                self.log("info", f"exiting with status {job.status} (scripted)")
                self.exit_process(job.status)
                await trio.sleep_forever()  # a fake exit in tests: stop writing
            case CloseJob():
                self.log("info", "closing stdout (scripted); still reading stdin")
                stdout.broken = True
                await self.stdout.aclose()
                if self.close_stdout is not None:
                    self.close_stdout()

    async def flush(self, data: bytes) -> None:
        """Write the reader's immediate answers: straight to stdout when the writer task holds
        nothing (one task switch less per round trip), else through the writer (order)."""
        # The writer must hold nothing: an item handed straight to a waiting writer leaves the
        # channel's buffer empty too, and must still go out first (so: a count, not the buffer).
        # Nothing queued also means the writer is not writing; while this writes, a batch the
        # writer takes meanwhile waits for it (_flushing), so lines never interleave.
        if self._pending or self._flushing:
            await self.send(data)
            return
        self._flushing = True
        try:
            if self.exit_after is None:  # (_write's own first case, inlined: once per round trip)
                await self._out.send_all(data)
            else:
                await self._write(data)
        finally:
            self._flushing = False
            if self._flushed is not None:
                self._flushed.set()
                self._flushed = None

    async def _write(self, data: bytes) -> None:
        """Write, counting lines when ``protocol.exitAfter`` is set (then die right after the Nth)."""
        stdout = self._out
        if self.exit_after is None:
            await stdout.send_all(data)
            return
        limit, status = self.exit_after
        cut = -1
        for _ in range(limit - self.lines_written):
            cut = data.find(b"\n", cut + 1)
            if cut < 0:
                self.lines_written += data.count(b"\n")
                await stdout.send_all(data)
                return
        await stdout.send_all(data[: cut + 1])
        self.lines_written = limit
        self.log("info", f"exiting with status {status} after {limit} lines written (protocol.exitAfter)")
        self.exit_process(status)
        await trio.sleep_forever()
