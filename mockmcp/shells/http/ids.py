"""The running plans holding each request id.

Ids are the sender's, and over HTTP the server cannot tell senders apart (every
SDK starts at 0 or 1): requests of two clients may hold one id at once. So each id
maps to the plans holding it, and the engine hears an id is finished when its
last holder ends; a ``notifications/cancelled`` cancels every plan holding it.
"""

from __future__ import annotations

from typing import Any, Callable

import trio

from mockmcp.shells.http.taps import Taps


class RequestIds:
    def __init__(self, finished: Callable[[Any], None], taps: Taps) -> None:
        self.finished = finished  # the connection's: the engine forgets the id (its last holder ended)
        self.taps = taps
        self._scopes: dict[Any, list[trio.CancelScope]] = {}  # request id -> its running plans' scopes
        self._holders: dict[Any, int] = {}  # request id -> planned requests holding it (not yet finished)

    def hold(self, rid: Any) -> None:
        """A planned request holds ``rid`` until it ends (``release``)."""
        self._holders[rid] = self._holders.get(rid, 0) + 1

    def release(self, rid: Any) -> None:
        """A request holding ``rid`` ended (answered, cancelled, cut by a fault): the engine hears the
        id is finished once no other request holds it."""
        left = self._holders.get(rid, 0) - 1
        if left > 0:
            self._holders[rid] = left
            return
        self._holders.pop(rid, None)
        self.finished(rid)

    def start(self, rid: Any, scope: trio.CancelScope) -> None:
        """A plan holding ``rid`` runs in ``scope`` (a cancel by id cancels it)."""
        self.hold(rid)
        self._scopes.setdefault(rid, []).append(scope)

    def end(self, rid: Any, scope: trio.CancelScope) -> None:
        """The plan started with ``start`` ended."""
        drop(self._scopes, rid, scope)
        self.release(rid)

    def running(self, rid: Any, scope: trio.CancelScope) -> bool:
        return any(s is scope for s in self._scopes.get(rid, ()))

    def cancel(self, rid: Any, reason: str | None) -> None:
        """A ``notifications/cancelled`` POSTed anyway (stdio's form): honoured like on stdio (every
        running request with that id: the server cannot tell whose it is)."""
        for scope in self._scopes.get(rid, ()):
            scope.cancel()
            self.taps.event("cancelled", {"id": rid, "reason": reason})


def drop(table: dict[Any, list[Any]], key: Any, item: object) -> bool:
    """Remove ``item`` (by identity) from ``table[key]``, and the key once empty; was it there?"""
    items = table.get(key)
    if items is None:
        return False
    for i, other in enumerate(items):
        if other is item:
            del items[i]
            if not items:
                del table[key]
            return True
    return False
