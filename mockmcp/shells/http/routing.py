"""The listen streams, by subscription id, and what is delivered onto them.

A ``subscriptions/listen`` request's stream is its subscription: emitted events go
to the streams the engine names, in its order; a notification that carries another
request's subscription id (``notifications/tasks`` after a ``tasks/get`` changed a
watched task) goes to that stream instead of the answer it was planned in; and the
control channel's events go to the streams they name. Delivery never waits: a
stream whose reader is behind loses the event (warned once, journaled each time).
At a graceful stop the server ends every open stream itself: its completion result,
then the end of its response (``end_all``).
"""

from __future__ import annotations

from typing import Any

import trio

from mockmcp.core.actions import Action, Emit, Plan, Send
from mockmcp.core.engine import Engine
from mockmcp.wire import protocol as p
from mockmcp.shells.http.channel import End, Sink, event_of
from mockmcp.shells.http.ids import drop
from mockmcp.shells.http.taps import Taps
from mockmcp.shells.log import StderrLog


class ListenRoutes:
    def __init__(self, engine: Engine, log: StderrLog, taps: Taps) -> None:
        self.engine = engine
        self.log = log
        self.taps = taps
        self.streams: dict[Any, list[Sink]] = {}  # listen request id -> its streams
        self._stalled: set[Any] = set()  # listen streams that dropped an event (warned once)
        self._closed = trio.Event()  # set (and replaced) each time a stream closes

    def open(self, sid: Any, sink: Sink) -> None:
        self.streams.setdefault(sid, []).append(sink)

    def close(self, sid: Any, sink: Sink) -> None:
        if drop(self.streams, sid, sink):
            self._stalled.discard(sid)
            self._closed.set()
            self._closed = trio.Event()

    async def fan_out(self, emit: Emit, own: Sink) -> None:
        """Deliver an event to the listen streams that want it (the engine says which, in order)."""
        engine = self.engine
        sids = engine.session.listeners(emit.event, emit.uri, emit.only, emit.has_only)
        if not sids:
            return
        for sid, send in zip(sids, engine.fan_out(emit)):
            for target in tuple(self.streams.get(sid, ())):
                if target is own:
                    await own.send(event_of(send))
                else:
                    self.deliver(sid, target, send)

    def to_listen_streams(self, plan: Plan) -> None:
        """Move a plan's notifications for other requests' listen streams onto those streams.

        On stdio every message shares one pipe; over HTTP a notification that carries
        another request's subscription id (``notifications/tasks`` after a ``tasks/get``
        changed a watched task) belongs on that listen stream, not in this answer."""
        if not self.streams:
            return
        kept: list[Action] = []
        moved = False
        for action in plan.actions:
            if type(action) is Send and not action.final:
                sid = subscription_of(action.message)
                targets = self.streams.get(sid) if sid is not None and sid != plan.request_id else None
                if targets:
                    for target in targets:
                        self.deliver(sid, target, action)
                    moved = True
                    continue
            kept.append(action)
        if moved:
            plan.actions = kept

    def deliver(self, sid: Any, target: Sink, send: Send) -> None:
        """One message onto a listen stream without waiting (a stream that is not read loses it)."""
        try:
            target.send_nowait(event_of(send))  # (journaled once written)
        except trio.WouldBlock:
            if sid not in self._stalled:  # once per stream: a stalled reader must not flood stderr
                self._stalled.add(sid)
                self.log("warning", f"listen stream {sid!r} is not being read; events for it are dropped")
            self.taps.event("dropped", {"id": sid, "method": send.message.get("method")})
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def deliver_all(self, sends: list[Send]) -> None:
        """Messages made outside a plan (the control channel's events) onto the listen streams they name."""
        for send in sends:
            sid = subscription_of(send.message)
            targets = self.streams.get(sid) if sid is not None else None
            if not targets:
                self.log("debug", f"no listen stream for {send.message.get('method')!r}; dropped (HTTP has no stream but listen streams)")
                continue
            for target in targets:
                self.deliver(sid, target, send)
        await trio.lowlevel.checkpoint()


    async def end_all(self, within: float) -> None:
        """The server ends every open listen stream (a graceful stop): each gets the listen request's
        completion result, then its response ends (its plan is then cut, as by ``endStream``); waits
        up to ``within`` seconds for them to be written. A stream not being read loses its end."""
        ending: list[tuple[Any, Sink]] = []
        for send in self.engine.subscription_ends():
            sid = send.message["id"]
            for target in tuple(self.streams.get(sid, ())):
                self.deliver(sid, target, send)
                try:
                    target.send_nowait(End())
                except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                    continue
                ending.append((sid, target))
        with trio.move_on_after(within):
            while any(any(s is sink for s in self.streams.get(sid, ())) for sid, sink in ending):
                await self._closed.wait()


def subscription_of(message: Any) -> Any:
    """The subscription id a notification carries in ``params._meta`` (``None``: none)."""
    params = message.get("params") if type(message) is dict else None
    meta = params.get("_meta") if type(params) is dict else None
    return meta.get(p.META_SUBSCRIPTION_ID) if type(meta) is dict else None
