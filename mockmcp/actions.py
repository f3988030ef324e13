"""The plan vocabulary: what the core asks the shell to do, in order.

A ``Plan`` is the list of actions that answers one inbound request. Plans made
only of ``Send`` actions are *immediate*: the shell writes them at once, in
input order, without starting a task. Anything with time in it (sleeps,
hangs, subscriptions, faults) runs in a task of its own that the client can
cancel.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define  # not frozen: one is made per message on the hot path (frozen init is 4x slower); treat as immutable
class Send:
    """Write one protocol message (``data`` is its encoded line)."""

    message: Any
    data: bytes
    final: bool = False  # the response that ends the request


@attrs.frozen
class Sleep:
    seconds: float


@attrs.frozen
class Emit:
    """Deliver a change event to open subscriptions (resolved when it runs)."""

    event: str
    uri: str | None = None
    only: Any = None  # a subscription id, or None for every matching one
    has_only: bool = False


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


Action = Send | Sleep | Emit | Park | WriteRaw | Exit | Dribble | Stderr | StopReading | CloseStdout


@attrs.define
class Plan:
    request_id: Any
    actions: list[Action]
    method: str | None = None
    rule: str | None = None  # which scenario rule answered (for the journal)
    immediate: bool = False
    has_id: bool = True


@attrs.frozen
class Cancel:
    """Stop the in-flight request ``request_id`` (a client cancellation)."""

    request_id: Any
    reason: str | None = None


Output = Plan | Cancel
