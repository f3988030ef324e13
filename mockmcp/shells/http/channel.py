"""The bounded channel between a running plan and the task that writes its answer.

A plan runs in a task of its own and never touches the socket: it puts items on
a channel of ``STREAM_BUFFER`` (its task waits when the writer is behind), and
the connection's task, the one writer of that socket, drains them (``sse``). The
items say what to write and what to do: bytes (``Out``, ``DribbleOut``), end the
process (``ExitNow``), drop the connection (``Reset``), end the answer (``End``),
close the stream for the client to resume it with ``GET`` (``Detach``).
"""

from __future__ import annotations

from typing import Any

import trio

from mockmcp.core import httprules
from mockmcp.core.actions import Dribble, Send

STREAM_BUFFER = 64  # SSE chunks queued per stream before its plan waits (or an event is dropped)

Event = tuple[str, dict[str, Any]]  # a journal event: its name and fields


class Out:
    """Bytes for the wire and what they carry, journaled once written (not when queued: a reset or
    the client closing can leave queued items unwritten, and the journal says what was sent)."""

    __slots__ = ("data", "send", "raw")

    def __init__(self, data: bytes, send: Send | None = None, raw: bytes | None = None) -> None:
        self.data, self.send, self.raw = data, send, raw


class DribbleOut(Out):
    """Bytes written ``chunk`` at a time, ``pause`` seconds apart (a ``dribble`` step)."""

    __slots__ = ("chunk", "pause")

    def __init__(self, data: bytes, chunk: int, pause: float, send: Send | None = None, raw: bytes | None = None) -> None:
        super().__init__(data, send, raw)
        self.chunk, self.pause = chunk, pause


class ExitNow:
    """End the process with ``status`` once ``partial`` is written (an ``exit`` step)."""

    __slots__ = ("status", "partial")

    def __init__(self, status: int, partial: bytes) -> None:
        self.status, self.partial = status, partial


class Reset:
    """Drop the connection without ending the response (``closeStdout``, ``http: {reset: true}``)."""

    __slots__ = ("event",)

    def __init__(self, event: Event | None = None) -> None:
        self.event = event  # journaled when the writer gets to it


class End:
    """End the response now, before its answer (``http: {endStream: true}``)."""

    __slots__ = ("event",)

    def __init__(self, event: Event | None = None) -> None:
        self.event = event


class Detach:
    """Close the stream for the client to resume (``http: {retry: ...}``): a priming event with an
    event id and ``retry`` (ms), the end of the response; the rest waits for the client's ``GET``."""

    __slots__ = ("retry_ms",)

    def __init__(self, retry_ms: int) -> None:
        self.retry_ms = retry_ms


Item = Out | ExitNow | Reset | End | Detach
Sink = trio.MemorySendChannel[Item]
Source = trio.MemoryReceiveChannel[Item]


def open_channel() -> tuple[Sink, Source]:
    return trio.open_memory_channel[Item](STREAM_BUFFER)


def event_of(send: Send) -> Out:
    """A message as one SSE event (for a listen stream)."""
    return Out(httprules.sse_event(send.data.rstrip(b"\n")), send)


class Hold:
    """Whether a request holds up a graceful stop (``busy``: scripted work left, until it parks or is written)."""

    __slots__ = ("busy",)

    def __init__(self) -> None:
        self.busy = False


class Run(Hold):
    """One running plan: its id, its channel, whether it answers as JSON, its dribble setting."""

    __slots__ = ("rid", "sink", "raw_json", "dribble")

    def __init__(self, rid: Any, sink: Sink, raw_json: bool) -> None:
        super().__init__()
        self.rid, self.sink, self.raw_json = rid, sink, raw_json
        self.dribble: Dribble | None = None

    async def put(self, data: bytes, send: Send | None = None, raw: bytes | None = None) -> None:
        """Queue one message (framed as an SSE event unless the answer is one JSON body)."""
        chunk = data if self.raw_json else httprules.sse_event(data.rstrip(b"\n"))
        if self.dribble is None:
            await self.sink.send(Out(chunk, send, raw))
        else:
            await self.sink.send(DribbleOut(chunk, self.dribble.chunk, self.dribble.pause, send, raw))
