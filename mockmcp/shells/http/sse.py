"""The writer of a streamed answer: drains a plan's channel onto the socket.

The connection's task is the one writer of its socket; it writes what the plan
put on its channel as SSE events (with a keep-alive comment after ``keepalive``
quiet seconds), or, for a plan answered as one JSON body, waits for the plan's
answer and writes it whole. Each message is journaled once written, and counted
for ``exitAfter``. A stream closed for the client to resume (``Detach``) ends
its response after the priming event; the rest of the plan's items are parked
for the client's ``GET`` (``resume``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import h11
import trio

from mockmcp.core import httprules
from mockmcp.wire import jsonrpc
from mockmcp.shells.http.channel import Detach, DribbleOut, End, ExitNow, Item, Out, Reset, Source
from mockmcp.shells.http.lifecycle import ExitCounter
from mockmcp.shells.http.responses import SSE_HEADERS, Dropped, is_json, json_head, write_json
from mockmcp.shells.http.resume import Parked, Resumes
from mockmcp.shells.http.taps import Taps


class StreamWriter:
    def __init__(self, taps: Taps, counter: ExitCounter, resumes: Resumes, keepalive: float = 15.0) -> None:
        self.taps = taps
        self.counter = counter
        self.resumes = resumes
        self.keepalive = keepalive  # seconds of quiet on an SSE stream before a keep-alive comment (0: none)

    async def write_sse(self, h: h11.Connection, stream: trio.abc.Stream, receive: Source,
                        head: httprules.Head | None = None, rid: Any = None,
                        detached: Callable[[], None] | None = None) -> None:
        """The plan's items as SSE; at a ``Detach``, the response ends and ``detached`` is called (the
        client leaving then is no cancel), and the rest of the items are parked for ``rid``'s resume."""
        headers = SSE_HEADERS if head is None else [*head.head_headers(b"text/event-stream"), *SSE_HEADERS[1:]]
        await stream.send_all(h.send(h11.Response(status_code=200, reason=b"OK", headers=headers)))
        keepalive = self.keepalive if self.keepalive > 0 else math.inf
        async with receive:
            while True:
                # Only the wait is timed: a write cut by a timeout would leave half an event on the wire.
                with trio.move_on_after(keepalive) as quiet:
                    item = await _receive(receive)
                if quiet.cancelled_caught:
                    await stream.send_all(h.send(h11.Data(data=httprules.KEEPALIVE)))
                    continue
                if item is None:
                    break
                if isinstance(item, End):
                    self.taps.item_event(item)
                    break
                if isinstance(item, Detach):
                    await self._detach(h, stream, receive, item, rid, detached)
                    return
                await self.write_item(h, stream, item)
        await stream.send_all(h.send(h11.EndOfMessage()))

    async def _detach(self, h: h11.Connection, stream: trio.abc.Stream, receive: Source, item: Detach, rid: Any,
                      detached: Callable[[], None] | None) -> None:
        """End the response after the priming event and park the rest of the plan for ``rid``'s resume.

        Whichever comes first decides: the client's close, seen by the watcher before this (this
        writer is then cancelled, and so is the plan), cancels the request and nothing is parked
        (a ``GET`` gets ``405``); from here on, a close is no cancel. Once parked, the stream is
        finished whatever ends this task (a cancel included), or a ``GET`` would wait on it forever.
        """
        # (no yield between the check and ``detached``: the watcher cannot act in between)
        await trio.lowlevel.checkpoint_if_cancelled()
        if detached is not None:  # first: the client may leave as soon as it reads the end
            detached()
        parked = self.resumes.park(rid, item.retry_ms)
        try:
            try:
                await stream.send_all(h.send(h11.Data(data=httprules.priming_event(parked.event_id, item.retry_ms))))
                await stream.send_all(h.send(h11.EndOfMessage()))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass  # (a disconnection is no cancel: the client may still resume)
            parked.closed()
            await _park_rest(receive, parked)
        finally:
            parked.finish()

    async def write_item(self, h: h11.Connection, stream: trio.abc.Stream, item: Item) -> None:
        match item:
            case DribbleOut():
                data = item.data
                for i in range(0, len(data), item.chunk):
                    await stream.send_all(h.send(h11.Data(data=data[i:i + item.chunk])))
                    if i + item.chunk < len(data):
                        await trio.sleep(item.pause)
                self.taps.written(item)
                if self.counter.counting:
                    await self.counter.count(1)
            case Out():
                await stream.send_all(h.send(h11.Data(data=item.data)))
                self.taps.written(item)
                if self.counter.counting:
                    await self.counter.count(1)
            case ExitNow():
                if item.partial:
                    await stream.send_all(h.send(h11.Data(data=item.partial)))
                await self.counter.exit(item.status)
            case Detach():
                pass  # (a stream resumed is not closed again)
            case Reset():
                self.taps.item_event(item)
                raise Dropped()  # (the connection is dropped without ending the response)

    async def write_json_when_done(self, h: h11.Connection, stream: trio.abc.Stream, receive: Source,
                                   head: httprules.Head | None = None) -> None:
        """One JSON body, written when the plan gave its answer (the last message it sent).

        A dribbled answer is written in its chunks; a ``reset`` drops the
        connection halfway through the answer's body; ``endStream`` answers
        with an empty body.
        """
        final: Out | None = None
        reset = False
        async with receive:
            while True:
                item = await _receive(receive)
                if item is None:
                    break
                if isinstance(item, End):
                    self.taps.item_event(item)
                    break
                if isinstance(item, Out):
                    final = item
                elif isinstance(item, Detach):
                    continue  # (a JSON body is not a stream to resume: check.py says so)
                elif isinstance(item, Reset):
                    self.taps.item_event(item)
                    reset = True
                else:
                    await self.write_item(h, stream, item)
        data = final.data if final is not None else b""
        status = httprules.status_for(jsonrpc.parse(data)) if b'"error"' in data and is_json(data) else 200
        if not reset and not isinstance(final, DribbleOut):
            await write_json(h, stream, status, data, head)
            if final is not None:
                self.taps.written(final)
                if self.counter.counting:
                    await self.counter.count(1)
            return
        await stream.send_all(h.send(json_head(status, len(data), head)))
        if reset:
            if data:
                await stream.send_all(h.send(h11.Data(data=data[: len(data) // 2])))
            raise Dropped()  # (dropped mid-body, as scripted)
        assert isinstance(final, DribbleOut)
        await self.write_item(h, stream, final)
        await stream.send_all(h.send(h11.EndOfMessage()))


async def _park_rest(receive: Source, parked: Parked) -> None:
    """The rest of a closed stream's items, kept for the client's ``GET`` until the plan ends."""
    while True:
        item = await _receive(receive)
        if item is None:
            break
        parked.add(item)
        if isinstance(item, End):
            break


async def _receive(channel: Source) -> Item | None:
    try:
        return await channel.receive()
    except trio.EndOfChannel:
        return None
