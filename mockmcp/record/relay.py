"""The trio plumbing ``record`` and ``proxy`` share: start a real server, pump lines both ways.

``start_server`` spawns the command with pipes for its stdin and stdout (stderr is
the user's) and refuses, before anything reads our stdin, a command that cannot be
run or that exits within the start-up window: a client would otherwise see a server
that answers nothing. ``pump`` reads a stream, cuts it into lines (each passed on
byte for byte, newline included), shows each line to an observer with the trio clock
and puts it on a bounded channel; ``drain`` is the one writer of a stream, taking
lines from its channel and writing them in batches. Channels hold 16 items, so a
side that stops reading stops the other side being read (back-pressure).
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Callable, Sequence

import trio

from mockmcp.wire.framing import LineSplitter

CHANNEL_SIZE = 16
READ_SIZE = 65536
STARTUP_WAIT = 0.2  # seconds a server must stay up before its client is read

Observer = Callable[[bytes, float], None]


class CommandError(Exception):
    """The server command cannot serve: the message says why (shown to the user as is)."""


def check_command(cmd: Sequence[str]) -> None:
    """Refuse at once a command that does not exist (before spawning anything)."""
    if not cmd:
        raise CommandError("no server command given: put it after `--`, e.g. `-- python server.py`")
    if shutil.which(cmd[0]) is None:
        raise CommandError(f"cannot run the server command {cmd[0]!r}: not found or not executable")


async def start_server(cmd: Sequence[str], startup: float = STARTUP_WAIT) -> trio.Process:
    """The running server, or ``CommandError`` if it cannot start or exits within ``startup`` seconds."""
    check_command(cmd)
    try:
        proc = await trio.lowlevel.open_process(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        raise CommandError(f"cannot run the server command {cmd[0]!r}: {exc.strerror or exc}") from None
    with trio.move_on_after(startup):
        status = await proc.wait()
        raise CommandError(f"the server command exited at once with status {status}: {' '.join(cmd)}")
    return proc


async def pump(source: trio.abc.ReceiveStream, send: trio.MemorySendChannel[bytes], observe: Observer | None) -> None:
    """Read ``source`` to EOF, observing and forwarding each line; close ``send`` at the end."""
    splitter = LineSplitter()
    async with send:
        while True:
            try:
                data = await source.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if type(data) is not bytes:
                data = bytes(data)
            lines = splitter.feed(data) if data else splitter.close()
            for line in lines:
                if observe is not None:
                    observe(line, trio.current_time())
                await send.send(line)
            if not data:
                return


async def drain(receive: trio.MemoryReceiveChannel[bytes], sink: trio.abc.SendStream, *, close: bool = True) -> None:
    """The one writer of ``sink``: lines from ``receive`` in batches; a sink that went away is ignored."""
    broken = False
    async with receive:
        async for line in receive:
            batch = [line]
            while len(batch) < 256:
                try:
                    batch.append(receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            if broken:
                continue
            try:
                await sink.send_all(b"".join(batch))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                broken = True  # keep draining, so the other side is never blocked by a gone reader
    if close:
        try:
            await sink.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


async def settle(proc: trio.Process, in_flight: Callable[[], int], grace: float) -> None:
    """After the client left: wait up to ``grace`` seconds for the requests in flight to be answered
    (or the server to exit), not longer than they need."""
    with trio.move_on_after(grace):
        while in_flight() and proc.returncode is None:
            await trio.sleep(0.01)
        # the answers are out of the server: give the pump a moment to pass them on
        await trio.sleep(0.01)


async def stop(proc: trio.Process, grace: float) -> None:
    """Let the server exit by itself for ``grace`` seconds (its stdin is closed), then terminate, then kill."""
    with trio.move_on_after(grace):
        await proc.wait()
        return
    proc.terminate()
    with trio.move_on_after(1.0):
        await proc.wait()
        return
    proc.kill()
    await proc.wait()


class ChannelReceiveStream(trio.abc.ReceiveStream):
    """A receive stream over a channel of byte strings (the engine's stdin in ``new_episodes``)."""

    def __init__(self, receive: trio.MemoryReceiveChannel[bytes]) -> None:
        self.receive = receive

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        try:
            return await self.receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    async def aclose(self) -> None:
        await self.receive.aclose()


class ChannelSendStream(trio.abc.SendStream):
    """A send stream into a channel of byte strings, shown to ``observe`` first."""

    def __init__(self, send: trio.MemorySendChannel[bytes], observe: Callable[[bytes], None] | None = None) -> None:
        self.send = send
        self.observe = observe

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        chunk = bytes(data)
        if self.observe is not None:
            self.observe(chunk)
        try:
            await self.send.send(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise trio.BrokenResourceError from None

    async def wait_send_all_might_not_block(self) -> None:
        return None

    async def aclose(self) -> None:
        await self.send.aclose()


__all__ = ["ChannelReceiveStream", "ChannelSendStream", "CommandError", "LineSplitter", "check_command", "start_server", "pump", "drain", "stop", "CHANNEL_SIZE"]
