"""The plan vocabulary: what the core asks the shell to do, in order.

A ``Plan`` is the list of actions that answers one inbound request. Plans made
only of ``Send`` actions are *immediate*: the shell writes them at once, in
input order, without starting a task. Anything with time in it (sleeps,
hangs, subscriptions, faults) runs in a task of its own that the client can
cancel.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import attrs


class Send:
    """Write one protocol message (``data`` is its encoded line).

    A plain slotted class, made once per message on the hot path. ``message``
    may be left out (``None``) when only the bytes were built (a compiled
    reply); it is then decoded from ``data`` the first time an observer asks.
    Treat as immutable.
    """

    __slots__ = ("_message", "data", "final")

    def __init__(self, message: Any, data: bytes, final: bool = False) -> None:
        self._message = message
        self.data = data
        self.final = final  # the response that ends the request

    @property
    def message(self) -> Any:
        if self._message is None:
            self._message = json.loads(self.data)
        return self._message

    def __eq__(self, other: object) -> bool:
        if type(other) is not Send:
            return NotImplemented
        return self.data == other.data and self.final == other.final

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Send(data={self.data!r}, final={self.final!r})"


@attrs.frozen
class Sleep:
    seconds: float


@attrs.frozen
class Emit:
    """Deliver a change event to open subscriptions (resolved when it runs)."""

    event: str
    uri: str | None = None
    only: Any = None  # a subscription id (see has_only)
    has_only: bool = attrs.field(default=False, kw_only=True)  # deliver to ``only`` alone


@attrs.frozen
class Park:
    """Wait until cancelled (a hang, or an open subscription stream)."""


@attrs.frozen
class WriteRaw:
    """Write bytes exactly as given (faults and the raw escape hatch)."""

    data: bytes


@attrs.frozen
class Exit:
    """Exit the process with ``status``; first write ``partial`` bytes if given."""

    status: int
    partial: bytes = b""


@attrs.frozen
class Dribble:
    """From now on in this plan, write in chunks of ``chunk`` bytes with pauses."""

    chunk: int
    pause: float


@attrs.frozen
class Stderr:
    text: str
    repeat: int = 1


@attrs.frozen
class StopReading:
    """Stop reading stdin for ``seconds`` (``None``: for good): back-pressure on the client."""

    seconds: float | None


@attrs.frozen
class CloseStdout:
    """Close stdout for good; the process keeps running and reading."""


@attrs.frozen
class HttpFault:
    """An HTTP transport fault (``http:`` step); the stdio shell ignores it.

    Before the plan's first message, its status, headers, content type, delay
    and body kind shape the response head (``httprules.head_faults``); where
    it stands, ``write``, ``end_stream`` and ``reset`` act on the body.
    """

    status: int | None = None
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str | None = None
    delay: float = 0.0
    respond_as: str | None = None
    write: bytes | None = None
    end_stream: bool = False
    reset: bool = False


Action = Send | Sleep | Emit | Park | WriteRaw | Exit | Dribble | Stderr | StopReading | CloseStdout | HttpFault


class Plan:
    """What answers one request: ``actions`` now, then ``rest`` pulled lazily while it runs.

    ``rest`` (long loops) yields ``None`` where work was done but nothing is to
    be performed, so the shell can let other tasks run. ``immediate``: only
    sends and no ``rest``, written at once without a task.

    A plain slotted class like ``Send``: one is made per request, and attrs'
    generated init with keyword-only defaults costs about four times a plain one
    (3,500 of a pipelined ``tools/call``'s ~95,000 instructions).
    """

    __slots__ = ("request_id", "actions", "method", "rule", "immediate", "has_id", "rest")

    def __init__(
        self,
        request_id: Any,
        actions: list[Action],
        method: str | None = None,
        rule: str | None = None,  # which scenario rule answered (for the journal)
        *,
        immediate: bool = False,
        has_id: bool = True,
        rest: Iterator[Action | None] | None = None,
    ) -> None:
        self.request_id = request_id
        self.actions = actions
        self.method = method
        self.rule = rule
        self.immediate = immediate
        self.has_id = has_id
        self.rest = rest

    def __repr__(self) -> str:
        return (
            f"Plan(request_id={self.request_id!r}, actions={self.actions!r}, method={self.method!r}, "
            f"rule={self.rule!r}, immediate={self.immediate!r}, has_id={self.has_id!r}, rest={self.rest!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not Plan:
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in Plan.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the attrs class it replaced

    def all_actions(self) -> Iterator[Action | None]:
        """Every action, the eager ones then the lazy rest."""
        yield from self.actions
        if self.rest is not None:
            yield from self.rest


@attrs.frozen
class Cancel:
    """Stop the in-flight request ``request_id`` (a client cancellation)."""

    request_id: Any
    reason: str | None = None


Output = Plan | Cancel
