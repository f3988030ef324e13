"""stdin and stdout as trio streams that take one loop turn per round trip, not three.

``trio.lowlevel.FdStream`` yields to the scheduler at the start of every
``receive_some`` and every ``send_all``, whether or not the pipe is ready. For
a request/response client (one line written, its answer awaited) each of those
yields is a whole run-loop turn with an ``epoll_wait`` of its own: the answer to
one request cost three turns, a third of a ping-pong round trip's work.

These streams do the I/O first and yield only when they must:

- ``receive_some`` reads at once. A pipe with nothing to read gets one plain loop
  turn and a second read before the task parks (``wait_readable``), since a
  request/response client's next line usually lands within that turn. Reads that found data
  without waiting yield once they add up to ``YIELD_EVERY`` bytes, shielded from
  cancellation, so a client that writes without pause cannot starve the other
  tasks (timers, the writer, the control socket) for longer than one full read
  already does, and the chunk taken is always returned, never lost to a cancel
  (the shell's pause and stop rely on that).
- ``send_all`` writes at once and waits only while the pipe is full. It does not
  yield otherwise: its callers (the writer task, the reader's immediate answers)
  each yield in their own loop, in the memory channel or in ``receive_some``.

Both check for cancellation before they touch the pipe, as every trio
checkpoint does. The shell writes stdout from one task at a time (the writer's
lock), so these streams keep no conflict detector of their own.
"""

from __future__ import annotations

import errno
import os

import trio


class _Fd:
    """A file descriptor in non-blocking mode, restored and closed once (``fd`` is -1 after)."""

    __slots__ = ("fd", "_was_blocking")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)

    def close(self) -> None:
        """Close inside trio: tasks waiting on the fd are woken first (with ClosedResourceError)."""
        if self.fd >= 0:
            trio.lowlevel.notify_closing(self.fd)
        self.release()

    def release(self) -> None:
        """Give the fd back as it was and close it. O_NONBLOCK is a flag of the open file
        description, shared with whoever else holds it (the parent's end of the pipe, a
        terminal): leaving it set would make their reads and writes fail with EAGAIN."""
        fd, self.fd = self.fd, -1
        if fd < 0:
            return
        try:
            os.set_blocking(fd, self._was_blocking)
        finally:
            os.close(fd)

    def __del__(self) -> None:
        # A stream dropped without aclose (the end of `trio.run`): what trio's own fd holder does.
        try:
            self.release()
        except OSError:
            pass  # closed behind our back already: nothing left to give back


YIELD_EVERY = 16384
"""Bytes a reader may take without waiting before it yields to the other tasks.

The shell handles one read's chunk without yielding (up to 64 KiB of input), so
other tasks already wait that long behind a flooding client; small reads that
find data may add up to a quarter of that (about 60 requests) before the reader
yields. A request/response client whose next line is already there when the
mock reads (the mock is the slower side, the usual case) then costs no run-loop
turn per line: a turn is about a tenth of a round trip."""


class PipeReceiveStream(trio.abc.ReceiveStream):
    """Reads a pipe (stdin): at once when it has data, waiting only when it has none."""

    def __init__(self, fd: int, *, yield_every: int = YIELD_EVERY) -> None:
        self._fd = _Fd(fd)
        self._yield_every = yield_every
        self._unyielded = 0  # bytes read without waiting since this reader last yielded

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        fd = self._fd.fd
        if fd < 0:
            raise trio.ClosedResourceError("file was already closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        if max_bytes is None:
            max_bytes = 65536
        elif max_bytes < 1:
            raise ValueError("max_bytes must be an integer >= 1")
        try:
            data = os.read(fd, max_bytes)
        except BlockingIOError:
            pass
        except OSError as exc:
            raise _broken(exc) from exc
        else:
            self._unyielded += len(data)
            if self._unyielded >= self._yield_every:
                self._unyielded = 0
                await trio.lowlevel.cancel_shielded_checkpoint()  # fairness; the chunk is kept
            return data
        # Empty: take one plain loop turn, then read again, before parking. A request/response
        # client is usually writing its next line while the mock finishes the last answer, so
        # the line is there after one turn (the floor's FdStream gets that turn for free);
        # parking at once cost an epoll registration and a blocking wait besides the turn,
        # on three round trips of four (ping-pong, measured; docs/performance.md).
        self._unyielded = 0  # (the turn lets every other task run)
        await trio.lowlevel.checkpoint()  # (a cancel here takes nothing)
        while True:
            try:
                return os.read(fd, max_bytes)
            except BlockingIOError:
                pass  # (still empty; or woken, but another reader of the same pipe took the data)
            except OSError as exc:
                raise _broken(exc) from exc
            await trio.lowlevel.wait_readable(fd)

    async def aclose(self) -> None:
        self._fd.close()
        await trio.lowlevel.checkpoint()


class PipeSendStream(trio.abc.SendStream):
    """Writes a pipe (stdout): at once, waiting only while the pipe is full."""

    def __init__(self, fd: int) -> None:
        self._fd = _Fd(fd)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        fd = self._fd.fd
        if fd < 0:
            raise trio.ClosedResourceError("file was already closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        length = len(data)
        try:
            sent = os.write(fd, data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise _broken(exc) from exc
        if sent == length:
            return
        with memoryview(data) as view:
            while sent < length:
                await trio.lowlevel.wait_writable(fd)
                try:
                    sent += os.write(fd, view[sent:])
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise _broken(exc) from exc

    async def wait_send_all_might_not_block(self) -> None:
        fd = self._fd.fd
        if fd < 0:
            raise trio.ClosedResourceError("file was already closed")
        await trio.lowlevel.wait_writable(fd)

    async def aclose(self) -> None:
        self._fd.close()
        await trio.lowlevel.checkpoint()


def _broken(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    """What trio's own fd streams raise: closed under us (EBADF), or the pipe broke."""
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("file was already closed")
    return trio.BrokenResourceError(str(exc))
