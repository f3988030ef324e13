"""The model classes of the fault steps and of the other steps few scenarios use.

Faults (``raw``, ``rawBytes``, ``hang``, ``exit``, ``dribble``, ``stderr``,
``stopReading``, ``closeStdout``, ``huge``), HTTP faults (``http``), ``forward`` (the
proxy), server requests (``request``) and the state and subscription controls
(``setState``, ``endSubscription``).

A part of the model (see ``base``'s docstring): imported only where one of these
classes is needed, since creating an attrs class is not free (see ``base``) and a warm
spawn creates the model first.
"""

from __future__ import annotations

from typing import Literal

import attrs
from attrs import field, frozen

from mockmcp.scenario.model.base import JSON, Duration, Model

__all__ = [
    "SetStateStep",
    "EndSubscriptionSpec",
    "EndSubscriptionStep",
    "RawStep",
    "RawBytesStep",
    "HangStep",
    "ExitSpec",
    "ExitStep",
    "DribbleSpec",
    "DribbleStep",
    "StderrStep",
    "StopReadingStep",
    "CloseStdoutStep",
    "RequestSpec",
    "RequestStep",
    "HugeSpec",
    "HugeStep",
    "HttpSpec",
    "HttpStep",
    "ForwardStep",
]


@frozen(repr=False, eq=False)
class SetStateStep(Model):
    """Move the scenario's state machine (per process) to another state."""

    KEY = "setState"

    setState: str


@frozen(repr=False, eq=False)
class EndSubscriptionSpec(Model):
    how: Literal["result", "cancelled"] = "result"


@frozen(repr=False, eq=False)
class EndSubscriptionStep(Model):
    """In a subscription timeline: end the stream gracefully or by cancellation."""

    KEY = "endSubscription"
    FINAL = True

    endSubscription: EndSubscriptionSpec


@frozen(repr=False, eq=False)
class RawStep(Model):
    """Write exactly this JSON value as one line (no checks, no filling in)."""

    KEY = "raw"

    raw: JSON


@frozen(repr=False, eq=False)
class RawBytesStep(Model):
    """Write exactly these bytes (a string; ``\\n`` etc. as YAML escapes)."""

    KEY = "rawBytes"

    rawBytes: str


@frozen(repr=False, eq=False)
class HangStep(Model):
    """Never answer this request (other requests are still served)."""

    KEY = "hang"
    FINAL = True

    hang: Literal[True]


@frozen(repr=False, eq=False)
class ExitSpec(Model):
    status: int = 1
    # where to die: now, or after writing only the first `partialBytes` of the next message
    partialBytes: int | None = None


@frozen(repr=False, eq=False)
class ExitStep(Model):
    KEY = "exit"
    FINAL = True

    exit: ExitSpec


@frozen(repr=False, eq=False)
class DribbleSpec(Model):
    chunkBytes: int = 1
    pause: Duration = Duration(0.01)


@frozen(repr=False, eq=False)
class DribbleStep(Model):
    """Write every following message of this reply in small chunks with pauses."""

    KEY = "dribble"

    dribble: DribbleSpec


@frozen(repr=False, eq=False)
class StderrStep(Model):
    """Write text to stderr, ``repeat`` times (a flood of logs)."""

    KEY = "stderr"

    stderr: str
    repeat: int = 1


@frozen(repr=False, eq=False)
class StopReadingStep(Model):
    """Stop reading stdin (back-pressure) for a while, or ``forever``.

    The reader stops after the input it is handling; the client's writes then
    block once the pipe buffer (about 64 KiB on Linux) is full. With
    ``forever`` EOF is never seen either, so only a signal ends the process.
    """

    KEY = "stopReading"

    stopReading: Literal["forever"] | Duration


@frozen(repr=False, eq=False)
class CloseStdoutStep(Model):
    """Close stdout (the client sees EOF) but keep running and reading stdin."""

    KEY = "closeStdout"

    closeStdout: Literal[True]


@frozen(repr=False, eq=False)
class RequestSpec(Model):
    """A request the server sends the client, in a legacy-era session (2025-11-25 has them).

    ``params`` may hold templates. The client's response is kept under
    ``responses[name]`` for the later steps' templates: ``{result: ...}``, ``{error: ...}``,
    or ``{timedOut: true}`` when none came within ``timeout`` (then the server cancels it).
    """

    method: Literal["sampling/createMessage", "elicitation/create", "roots/list", "ping"]
    params: dict[str, JSON] = attrs.Factory(dict)
    name: str | None = None  # default: the method's first part (sampling, elicitation, roots, ping)
    timeout: Duration = Duration(10.0)
    # What the client's response must match (like `when` values: {result: {...}} or {error: {...}}),
    # a cassette's recorded answer; a different one is a finding with the near miss (the reply goes on).
    expect: JSON = None


@frozen(repr=False, eq=False)
class RequestStep(Model):
    """Send the client a request and wait for its answer (legacy era: sampling, elicitation, roots)."""

    KEY = "request"

    request: RequestSpec


@frozen(repr=False, eq=False)
class HugeSpec(Model):
    """A complete text result whose text is ``bytes`` copies of ``char``."""

    bytes: int
    char: str = "x"


@frozen(repr=False, eq=False)
class HugeStep(Model):
    """A huge (but valid) result, sized in the scenario."""

    KEY = "huge"
    FINAL = True

    huge: HugeSpec


@frozen(repr=False, eq=False)
class HttpSpec(Model):
    """What the HTTP shell does wrong on demand (``mockmcp run --http``; ignored on stdio).

    Head faults apply when the step comes before the reply's first message:
    ``status`` answers the POST with that status, ``body`` and ``headers`` at
    once (429/503 with ``Retry-After``, 500, a redirect with ``Location``), and
    the rest of the reply is for stdio only; ``headers`` adds or replaces
    response headers; ``contentType`` replaces the Content-Type (``""``: none);
    ``delay`` holds the response head back (slow headers); ``respondAs``
    answers with a JSON body or an SSE stream whatever the reply needs.
    Body faults happen where the step stands: ``write`` puts these bytes in the
    body unframed (malformed SSE), ``endStream`` ends the response before its
    answer, ``reset`` drops the connection (mid-stream, or mid-body for JSON),
    ``retry`` (the 2025-11-25 polling) sends a priming event with an event id and
    that ``retry`` field, ends the response, and keeps the rest of the reply for
    the client's ``GET`` with ``Last-Event-ID`` (the resumed stream).
    """

    status: int | None = None
    body: str = ""
    headers: dict[str, str] = field(factory=dict)
    contentType: str | None = None
    delay: Duration | None = None
    respondAs: Literal["json", "sse"] | None = None
    write: str | None = None
    endStream: bool = False
    reset: bool = False
    retry: Duration | None = None


@frozen(repr=False, eq=False)
class HttpStep(Model):
    """An HTTP transport fault (a status, headers, a slow head, broken framing, a reset)."""

    KEY = "http"

    http: HttpSpec


@frozen(repr=False, eq=False)
class ForwardStep(Model):
    """``mockmcp proxy``: pass the request to the real server now; its answer is the final one.

    ``pass`` delivers the answer (after the steps before, e.g. a sleep or a dribble);
    ``drop`` swallows it; ``duplicate`` delivers it twice; ``wrong-id`` delivers it with
    an id the client never used. Outside the proxy there is no real server: the request
    gets an internal error saying so.
    """

    KEY = "forward"
    FINAL = True

    forward: Literal["pass", "drop", "duplicate", "wrong-id"]

