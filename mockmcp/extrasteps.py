"""The model classes of the less common steps, defined only when a scenario uses one.

Faults (``raw``, ``rawBytes``, ``hang``, ``exit``, ``dribble``, ``stderr``,
``stopReading``, ``closeStdout``, ``huge``), HTTP faults, ``forward`` (the proxy),
server requests (``request``) and the state and subscription controls
(``setState``, ``endSubscription``).

Why a module of their own: creating an attrs class costs about 1.2 M instructions
(attrs' own processing and one ``compile`` of its ``__init__``), and a warm spawn
imports the model before anything else. A scenario that uses none of these steps
(its load cache names none of these classes) never imports this module, and its
spawn skips twenty classes.

They are still part of ``model``: importing this module adds its names to
``model``'s namespace, so ``model.HangStep`` and the type hints of ``model``'s
classes (``list[Step]``) resolve as before, and ``model``'s ``__getattr__``
imports it on the first use of one of them. The loaders, the checks and the
schema import it, since they need every class.
"""

from __future__ import annotations

from typing import Literal, Union

import attrs
from attrs import field, frozen

from . import model
from .model import (
    JSON,
    Duration,
    EmitStep,
    ErrorStep,
    InputRequiredStep,
    LogStep,
    LoopStep,
    Model,
    ProgressStep,
    ResultStep,
    SleepStep,
    TaskStep,
    TextStep,
)

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
    "Step",
    "STEP_TYPES",
    "STEP_KEYS",
    "TERMINAL_STEPS",
]


@frozen(repr=False, eq=False)
class SetStateStep(Model):
    """Move the scenario's state machine (per process) to another state."""

    setState: str


@frozen(repr=False, eq=False)
class EndSubscriptionSpec(Model):
    how: Literal["result", "cancelled"] = "result"


@frozen(repr=False, eq=False)
class EndSubscriptionStep(Model):
    """In a subscription timeline: end the stream gracefully or by cancellation."""

    FINAL = True

    endSubscription: EndSubscriptionSpec


@frozen(repr=False, eq=False)
class RawStep(Model):
    """Write exactly this JSON value as one line (no checks, no filling in)."""

    raw: JSON


@frozen(repr=False, eq=False)
class RawBytesStep(Model):
    """Write exactly these bytes (a string; ``\\n`` etc. as YAML escapes)."""

    rawBytes: str


@frozen(repr=False, eq=False)
class HangStep(Model):
    """Never answer this request (other requests are still served)."""

    FINAL = True

    hang: Literal[True]


@frozen(repr=False, eq=False)
class ExitSpec(Model):
    status: int = 1
    # where to die: now, or after writing only the first `partialBytes` of the next message
    partialBytes: int | None = None


@frozen(repr=False, eq=False)
class ExitStep(Model):
    FINAL = True

    exit: ExitSpec


@frozen(repr=False, eq=False)
class DribbleSpec(Model):
    chunkBytes: int = 1
    pause: Duration = Duration(0.01)


@frozen(repr=False, eq=False)
class DribbleStep(Model):
    """Write every following message of this reply in small chunks with pauses."""

    dribble: DribbleSpec


@frozen(repr=False, eq=False)
class StderrStep(Model):
    """Write text to stderr, ``repeat`` times (a flood of logs)."""

    stderr: str
    repeat: int = 1


@frozen(repr=False, eq=False)
class StopReadingStep(Model):
    """Stop reading stdin (back-pressure) for a while, or ``forever``.

    The reader stops after the input it is handling; the client's writes then
    block once the pipe buffer (about 64 KiB on Linux) is full. With
    ``forever`` EOF is never seen either, so only a signal ends the process.
    """

    stopReading: Literal["forever"] | Duration


@frozen(repr=False, eq=False)
class CloseStdoutStep(Model):
    """Close stdout (the client sees EOF) but keep running and reading stdin."""

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

    request: RequestSpec


@frozen(repr=False, eq=False)
class HugeSpec(Model):
    """A complete text result whose text is ``bytes`` copies of ``char``."""

    bytes: int
    char: str = "x"


@frozen(repr=False, eq=False)
class HugeStep(Model):
    """A huge (but valid) result, sized in the scenario."""

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
    answer, ``reset`` drops the connection (mid-stream, or mid-body for JSON).
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


@frozen(repr=False, eq=False)
class HttpStep(Model):
    """An HTTP transport fault (a status, headers, a slow head, broken framing, a reset)."""

    http: HttpSpec


@frozen(repr=False, eq=False)
class ForwardStep(Model):
    """``mockmcp proxy``: pass the request to the real server now; its answer is the final one.

    ``pass`` delivers the answer (after the steps before, e.g. a sleep or a dribble);
    ``drop`` swallows it; ``duplicate`` delivers it twice; ``wrong-id`` delivers it with
    an id the client never used. Outside the proxy there is no real server: the request
    gets an internal error saying so.
    """

    FINAL = True

    forward: Literal["pass", "drop", "duplicate", "wrong-id"]


Step = Union[
    ResultStep,
    TextStep,
    ErrorStep,
    InputRequiredStep,
    SleepStep,
    ProgressStep,
    LogStep,
    EmitStep,
    SetStateStep,
    LoopStep,
    EndSubscriptionStep,
    RawStep,
    RawBytesStep,
    HangStep,
    ExitStep,
    DribbleStep,
    StderrStep,
    StopReadingStep,
    CloseStdoutStep,
    HugeStep,
    TaskStep,
    ForwardStep,
    RequestStep,
    HttpStep,
]
STEP_TYPES: tuple[type, ...] = Step.__args__  # type: ignore[attr-defined]
# The key that identifies each step type (its first field).
STEP_KEYS: dict[str, type] = {attrs.fields(t)[0].name: t for t in STEP_TYPES}
TERMINAL_STEPS = (ResultStep, TextStep, ErrorStep, InputRequiredStep, HangStep, ExitStep, HugeStep, TaskStep, ForwardStep)


vars(model).update({name: globals()[name] for name in __all__})  # see the module's docstring
