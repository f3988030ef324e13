"""The streams the mock closed for the client to resume, and the ``GET`` that resumes one.

The 2025-11-25 transport lets a server close an SSE stream before its answer
(``http: {retry: 500ms}``): it sends a priming event with an event id and a
``retry`` field, ends the response, and the client, after waiting ``retry``
milliseconds, resumes the stream with a ``GET`` whose ``Last-Event-ID`` is the
last id it saw. The writer of the closed stream parks the rest of the plan's
items here (``Resumes.park``) as the plan goes on; the ``GET`` claims them and
writes them, each event with an id of that stream. What the client did wrong
is a finding: a ``GET`` sooner than ``retry`` after the close, or without (or
with another) ``Last-Event-ID``; a stream never resumed is the verifier's
(``httpRetry`` without ``httpResumed`` in the journal).
"""

from __future__ import annotations

import math
from typing import Any, Awaitable, Callable

import h11
import trio

from mockmcp.core import httprules
from mockmcp.shells.http.channel import DribbleOut, End, Item, Out
from mockmcp.shells.http.responses import SSE_HEADERS
from mockmcp.shells.http.taps import Taps

ItemWriter = Callable[[h11.Connection, trio.abc.Stream, Item], Awaitable[None]]


class Parked:
    """One closed stream: its request, the id of its last event, its ``retry``, and the rest of it."""

    __slots__ = ("rid", "stream_no", "event_id", "retry_ms", "closed_at", "items", "done", "_more")

    def __init__(self, rid: Any, stream_no: int, retry_ms: int) -> None:
        self.rid = rid
        self.stream_no = stream_no
        self.event_id = f"mockmcp-{stream_no}-0"  # the priming event's (ids say their stream: the spec's SHOULD)
        self.retry_ms = retry_ms
        self.closed_at = trio.current_time()  # set again when the response has ended (``closed``)
        self.items: list[Item] = []
        self.done = False  # the plan has ended: ``items`` is the whole rest
        self._more = trio.Event()

    def closed(self) -> None:
        self.closed_at = trio.current_time()

    def add(self, item: Item) -> None:
        self.items.append(item)
        self._wake()

    def finish(self) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        self._more.set()
        self._more = trio.Event()

    async def more(self) -> None:
        await self._more.wait()


class Resumes:
    """The parked streams by the id of their last event, oldest first (one ``GET`` resumes one)."""

    def __init__(self, taps: Taps, keepalive: float = 15.0) -> None:
        self.taps = taps
        self.keepalive = keepalive  # seconds of quiet on a resumed stream before a keep-alive comment (0: none)
        self.parked: dict[str, Parked] = {}
        self._streams = 0

    def waiting(self) -> bool:
        return bool(self.parked)

    def park(self, rid: Any, retry_ms: int) -> Parked:
        self._streams += 1
        parked = Parked(rid, self._streams, retry_ms)
        self.parked[parked.event_id] = parked
        self.taps.event("httpRetry", {"id": rid, "eventId": parked.event_id, "retryMs": retry_ms})
        return parked

    def claim(self, last_event_id: str | None) -> Parked | None:
        """The stream a ``GET`` resumes: the one whose last event id it names, else the oldest one
        (a client that lost the id still gets its answer; the finding says what it did wrong)."""
        parked = self.parked.pop(last_event_id, None) if last_event_id is not None else None
        if parked is None and self.parked:
            parked = self.parked.pop(next(iter(self.parked)))
        return parked

    async def resume(self, h: h11.Connection, stream: trio.abc.Stream, headers: dict[bytes, bytes],
                     write_item: ItemWriter) -> bool:
        """Answer a ``GET``: the claimed stream's rest, as the plan makes it (``False``: none to resume).

        ``write_item`` is the stream writer's (``sse.StreamWriter.write_item``): it writes, journals
        and counts an item, and raises ``Dropped`` for a scripted reset."""
        raw = headers.get(b"last-event-id")
        last = raw.decode("latin-1").strip() if raw is not None else None
        parked = self.claim(last)
        if parked is None:
            return False
        self._judge(parked, last)
        await stream.send_all(h.send(h11.Response(status_code=200, reason=b"OK", headers=SSE_HEADERS)))
        keepalive = self.keepalive if self.keepalive > 0 else math.inf
        n = 0
        while True:
            while n < len(parked.items):
                item = parked.items[n]
                n += 1
                if isinstance(item, End):
                    self.taps.item_event(item)
                    await stream.send_all(h.send(h11.EndOfMessage()))
                    return True
                if isinstance(item, Out) and item.send is not None:
                    data = httprules.with_event_id(item.data, f"mockmcp-{parked.stream_no}-{n}")
                    item = (DribbleOut(data, item.chunk, item.pause, item.send, item.raw) if isinstance(item, DribbleOut)
                            else Out(data, item.send, item.raw))
                await write_item(h, stream, item)
            if parked.done:
                break
            # Only the wait is timed (as on any stream): a slow plan's resumed stream is not silent.
            with trio.move_on_after(keepalive) as quiet:
                await parked.more()
            if quiet.cancelled_caught:
                await stream.send_all(h.send(h11.Data(data=httprules.KEEPALIVE)))
        await stream.send_all(h.send(h11.EndOfMessage()))
        return True

    def _judge(self, parked: Parked, last: str | None) -> None:
        waited = (trio.current_time() - parked.closed_at) * 1000
        self.taps.event("httpResumed", {"id": parked.rid, "eventId": parked.event_id, "lastEventId": last,
                                        "waitedMs": round(waited)})
        if waited < parked.retry_ms:
            self.taps.finding("http.resume.early", f"GET to resume the stream of request {parked.rid!r} came"
                              f" {waited:.0f} ms after the mock closed it, sooner than its retry: {parked.retry_ms}",
                              None, parked.rid)
        if last is None:
            self.taps.finding("http.resume.lastEventId", f"GET to resume the stream of request {parked.rid!r} without"
                              f" Last-Event-ID (the last event id on it was {parked.event_id!r})", None, parked.rid)
        elif last != parked.event_id:
            self.taps.finding("http.resume.lastEventId", f"GET to resume the stream of request {parked.rid!r} with"
                              f" Last-Event-ID {last!r}, not the last event id on it ({parked.event_id!r})",
                              None, parked.rid)
