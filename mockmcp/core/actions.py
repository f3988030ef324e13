"""The plan vocabulary: what the core asks the shell to do, in order.

A ``Plan`` is the list of actions that answers one inbound request. Plans made
only of ``Send`` actions are *immediate*: the shell writes them at once, in
input order, without starting a task. Anything with time in it (sleeps,
hangs, subscriptions, faults) runs in a task of its own that the client can
cancel.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator



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


class _Value:
    """Plain slotted value classes: ``==``, ``hash`` and ``repr`` over ``__slots__``.

    The actions were attrs frozen classes; attrs compiles an init, repr, eq and
    hash for each when the module is imported, a sixth of mockmcp's own import
    work on every spawn, and the core makes these objects per request and per
    event. Treat as immutable.
    """

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((self.__class__, self._values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{self.__class__.__name__}({inner})"


class Sleep(_Value):
    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Emit(_Value):
    """Deliver a change event to open subscriptions (resolved when it runs)."""

    __slots__ = ("event", "uri", "only", "has_only")

    def __init__(self, event: str, uri: str | None = None, only: Any = None, *, has_only: bool = False) -> None:
        self.event = event
        self.uri = uri
        self.only = only  # a subscription id (see has_only)
        self.has_only = has_only  # deliver to ``only`` alone


class Park(_Value):
    """Wait until cancelled (a hang, or an open subscription stream)."""

    __slots__ = ()


class WriteRaw(_Value):
    """Write bytes exactly as given (faults and the raw escape hatch)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Exit(_Value):
    """Exit the process with ``status``; first write ``partial`` bytes if given."""

    __slots__ = ("status", "partial")

    def __init__(self, status: int, partial: bytes = b"") -> None:
        self.status = status
        self.partial = partial


class Dribble(_Value):
    """From now on in this plan, write in chunks of ``chunk`` bytes with pauses."""

    __slots__ = ("chunk", "pause")

    def __init__(self, chunk: int, pause: float) -> None:
        self.chunk = chunk
        self.pause = pause


class Stderr(_Value):
    __slots__ = ("text", "repeat")

    def __init__(self, text: str, repeat: int = 1) -> None:
        self.text = text
        self.repeat = repeat


class StopReading(_Value):
    """Stop reading stdin for ``seconds`` (``None``: for good): back-pressure on the client."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds


class CloseStdout(_Value):
    """Close stdout for good; the process keeps running and reading."""

    __slots__ = ()


class WaitTasks(_Value):
    """Wait until some request changed tasks, or ``seconds`` pass (``None``: only the former).

    A listen stream that watches tasks waits so: time-driven changes are due at
    known moments, the others come from requests the shell has just handled.
    """

    __slots__ = ("seconds",)

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds


class HttpFault(_Value):
    """An HTTP transport fault (``http:`` step); the stdio shell ignores it.

    Before the plan's first message, its status, headers, content type, delay
    and body kind shape the response head (``httprules.head_faults``); where
    it stands, ``write``, ``end_stream``, ``reset`` and ``retry`` (seconds: the
    stream is closed for the client to resume with ``GET``) act on the body.
    """

    __slots__ = ("status", "body", "headers", "content_type", "delay", "respond_as", "write", "end_stream", "reset",
                 "retry")

    def __init__(
        self,
        status: int | None = None,
        body: bytes = b"",
        headers: tuple[tuple[str, str], ...] = (),
        content_type: str | None = None,
        delay: float = 0.0,
        respond_as: str | None = None,
        write: bytes | None = None,
        end_stream: bool = False,
        reset: bool = False,
        retry: float | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.headers = headers
        self.content_type = content_type
        self.delay = delay
        self.respond_as = respond_as
        self.write = write
        self.end_stream = end_stream
        self.reset = reset
        self.retry = retry



class Forward(_Value):
    """Pass the request to the real server (``mockmcp proxy``); ``how`` its answer is delivered."""

    __slots__ = ("how",)

    def __init__(self, how: str) -> None:
        self.how = how  # pass | drop | duplicate | wrong-id


class Ask:
    """Send the client a request (legacy era) and wait up to ``timeout`` for its response.

    The shell writes ``data``, waits for the ``Answer`` with ``id`` (the reader routes
    it), then calls ``deliver`` with the client's response message, or ``None`` after
    the timeout, having written ``cancel`` (the server's notifications/cancelled).
    The plan's later steps are expanded only after that (they may use the answer).
    """

    __slots__ = ("id", "message", "data", "timeout", "cancel", "deliver")

    def __init__(self, id: Any, message: Any, data: bytes, timeout: float, cancel: bytes, deliver: Callable[[Any], None]) -> None:
        self.id, self.message, self.data, self.timeout, self.cancel, self.deliver = id, message, data, timeout, cancel, deliver

    def __repr__(self) -> str:
        return f"Ask({self.id!r}, {self.message!r})"


Action = Send | Sleep | Emit | Park | WriteRaw | Exit | Dribble | Stderr | StopReading | CloseStdout | WaitTasks | Forward | Ask | HttpFault


class Plan:
    """What answers one request: ``actions`` now, then ``rest`` pulled lazily while it runs.

    ``rest`` (long loops) yields ``None`` where work was done but nothing is to
    be performed, so the shell can let other tasks run. ``immediate``: only
    sends and no ``rest``, written at once without a task.

    A plain slotted class like ``Send``: one is made per request, and attrs'
    generated init with keyword-only defaults costs about four times a plain one.
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


def answered(request_id: Any, send: Send, method: str | None, rule: str | None) -> Plan:
    """``Plan(request_id, [send], method, rule, immediate=True)``: an answer written at once.

    Most requests end here, and calling a class with a keyword argument makes a
    dictionary for it on every call; this builds the same plan without one.
    """
    plan = _new_plan(Plan)
    plan.request_id = request_id
    plan.actions = [send]
    plan.method = method
    plan.rule = rule
    plan.immediate = True
    plan.has_id = True
    plan.rest = None
    return plan


_new_plan = object.__new__


class Cancel(_Value):
    """Stop the in-flight request ``request_id`` (a client cancellation)."""

    __slots__ = ("request_id", "reason")

    def __init__(self, request_id: Any, reason: str | None = None) -> None:
        self.request_id = request_id
        self.reason = reason


class Answer(_Value):
    """The client's response to the server's request ``id`` (routed to the waiting ``Ask``)."""

    __slots__ = ("id", "message")

    def __init__(self, id: Any, message: Any) -> None:
        self.id = id
        self.message = message


Output = Plan | Cancel | Answer
