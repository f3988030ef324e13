"""The scenario model: frozen attrs classes that describe what the mock does.

This module never sees YAML; ``loader`` turns a file into these objects with one
strict cattrs converter, and ``schema`` derives the editor JSON Schema from them.
Field names are the scenario keys (camelCase, like the MCP wire format); a field
whose YAML key cannot be a Python name carries ``metadata={"key": ...}``.

Steps are single-key mappings (``{sleep: 20ms}``, ``{result: {...}}``); each
step class has exactly one required field, named like its key, which is how the
loader tells them apart.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal

import attrs
from attrs import field, frozen

JSON = Any  # any JSON value; passed through as written

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_REPR_CONTEXT = threading.local()  # the objects being repr'd, per thread (a cycle prints "...")


def _names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(a.name for a in attrs.fields(cls))
    return names


class Model:
    """The base of every model class (``FINAL``: is it a step after which nothing more
    of its list runs? the steps that answer, and ``endSubscription``), and one ``__repr__``, ``__eq__`` and ``__hash__``
    for all of them, doing what attrs generates for a frozen class (the same text,
    the same comparisons field by field), instead of attrs generating and compiling
    them for each of the 52 classes: that was half of this module's import time,
    and every spawn imports it (``tests/test_model.py`` compares them with attrs')."""

    __slots__ = ()
    FINAL = False  # (no annotation: type hints of the classes stay their fields)

    def __repr__(self) -> str:
        try:
            repring: set[int] = _REPR_CONTEXT.ids
        except AttributeError:
            repring = _REPR_CONTEXT.ids = set()
        if id(self) in repring:
            return "..."
        repring.add(id(self))
        try:
            cls = self.__class__
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(cls))
            return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({inner})"
        finally:
            repring.remove(id(self))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _names(self.__class__))

    def __hash__(self) -> int:
        cls = self.__class__
        return hash((cls, *[getattr(self, name) for name in _names(cls)]))


def _meta_field() -> Any:
    return field(default=None, metadata={"key": "_meta"})


@frozen(repr=False, eq=False)
class Duration(Model):
    """A time span written as ``250ms``, ``1.5s`` or ``2m``; in ``sleep`` also a template
    such as ``"{{ arguments.ms }}ms"`` (then ``template`` holds it, rendered per request)."""

    seconds: float
    template: str | None = None


@frozen(repr=False, eq=False)
class RandomDelay(Model):
    """A random delay drawn uniformly from [min, max] (seeded by ``--seed``)."""

    min: Duration
    max: Duration


# ---------------------------------------------------------------- steps


@frozen(repr=False, eq=False)
class ErrorSpec(Model):
    code: int
    message: str | None = None  # omitted or null: the standard message for the code (a real null needs a raw step)
    data: JSON = None


@frozen(repr=False, eq=False)
class InputRequiredSpec(Model):
    """An ``input_required`` result: input requests keyed by name, and/or state.

    ``requestState: true`` (default) lets mockmcp issue its own HMAC-protected
    state (carrying the round); a string is appended to it as scenario data;
    ``false`` sends none (then at least one input request is needed).
    """

    inputRequests: dict[str, JSON] = attrs.Factory(dict)
    requestState: bool | str = True


@frozen(repr=False, eq=False)
class ProgressSpec(Model):
    """A progress notification; ``progress``/``total`` may be templates (``"{{ index }}"``)."""

    progress: float | str
    total: float | str | None = None
    message: str | None = None
    # a non-increasing value on purpose (``mockmcp check`` then does not warn)
    deliberate: bool = False


@frozen(repr=False, eq=False)
class LogSpec(Model):
    level: Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
    data: JSON
    logger: str | None = None


@frozen(repr=False, eq=False)
class EmitSpec(Model):
    event: Literal["tools/list_changed", "prompts/list_changed", "resources/list_changed", "resources/updated"]
    uri: str | None = None


@frozen(repr=False, eq=False)
class ResultStep(Model):
    """A complete result; ``resultType`` and serverInfo are filled in."""

    FINAL = True

    result: dict[str, JSON]


@frozen(repr=False, eq=False)
class TextStep(Model):
    """Shorthand for a complete result holding one text (tool, prompt or resource)."""

    FINAL = True

    text: str


@frozen(repr=False, eq=False)
class ErrorStep(Model):
    FINAL = True

    error: ErrorSpec


@frozen(repr=False, eq=False)
class InputRequiredStep(Model):
    FINAL = True

    inputRequired: InputRequiredSpec


@frozen(repr=False, eq=False)
class SleepStep(Model):
    sleep: Duration | RandomDelay


@frozen(repr=False, eq=False)
class ProgressStep(Model):
    progress: ProgressSpec


@frozen(repr=False, eq=False)
class LogStep(Model):
    log: LogSpec


@frozen(repr=False, eq=False)
class EmitStep(Model):
    emit: EmitSpec


@frozen(repr=False, eq=False)
class LoopSpec(Model):
    """Run ``steps`` ``times`` times (a number or a template such as
    ``"{{ default(arguments.steps, 3) }}"``); ``{{ index }}`` counts from 1."""

    times: int | str
    steps: list["Step"]


@frozen(repr=False, eq=False)
class LoopStep(Model):
    """Repeat non-final steps (progress, log, sleep, emit...) a number of times."""

    loop: LoopSpec


@frozen(repr=False, eq=False)
class TaskPhase(Model):
    """One stretch of a task's life, ended by time (``after``), by polls
    (``polls``: this many ``tasks/get`` answered in it), by named state
    (``state``), or, for ``input_required``, by every input request answered.
    A ``working`` phase with none of them lasts until the task is cancelled."""

    status: Literal["working", "input_required"] = "working"
    statusMessage: str | None = None
    after: Duration | None = None
    polls: int | None = None
    state: str | list[str] | None = None
    inputRequests: dict[str, JSON] | None = None
    pollIntervalMs: int | None = None


@frozen(repr=False, eq=False)
class TaskFaults(Model):
    """Deliberate violations of the Tasks extension (see docs/faults.md)."""

    vanishAfterPolls: int | None = None  # tasks/get answers "not found" once this many polls were answered
    statusBackwards: bool = False  # after the first phase change, one poll reports the previous status again
    terminalChanges: bool = False  # a terminal task reports a different status on the next poll
    hangGetAfterPolls: int | None = None  # tasks/get never answers once this many polls were answered
    reuseInputKey: bool = False  # every input_required phase asks under the first phase's first key
    ignoreCapability: bool = False  # return the task even to a client without the extension capability
    anyMethod: bool = False  # allow this task step on a request the extension does not augment (prompts/get...)


@frozen(repr=False, eq=False)
class TaskSpec(Model):
    """Answer with a task handle (``resultType: task``) whose life is scripted.

    ``phases`` run in order; after the last one the task ends with ``outcome``
    (one text/result step: ``completed``; one error step: ``failed``; empty:
    ``completed`` with no content). ``cancel: honour`` makes ``tasks/cancel``
    end the task as ``cancelled``; ``ignore`` only acknowledges it.
    ``withoutCapability`` says what a client without the extension gets: the
    outcome at once (``answer``) or -32021 (``error``).
    """

    phases: list[TaskPhase] = attrs.Factory(list)
    outcome: list["Step"] = attrs.Factory(list)
    ttlMs: int | None = 3_600_000
    pollIntervalMs: int = 1000
    statusMessage: str | None = None
    cancel: Literal["honour", "ignore"] = "honour"
    withoutCapability: Literal["error", "answer"] = "error"
    faults: TaskFaults | None = None


@frozen(repr=False, eq=False)
class TaskStep(Model):
    """Answer ``tools/call`` with a task the client polls (the Tasks extension)."""

    FINAL = True

    task: TaskSpec


# ---------------------------------------------------------------- rules


@frozen(repr=False, eq=False)
class Match(Model):
    """``when``: which requests a rule answers. Every given key must match.

    Mappings match as subsets (extra keys in the request are fine); lists and
    scalars match exactly; ``{$regex: ...}``, ``{$present: true}``,
    ``{$absent: true}``, ``{$type: string}`` and ``{$contains: ...}`` are matchers.
    """

    arguments: dict[str, JSON] | None = None
    exactArguments: bool = False
    round: int | None = None
    inputResponses: dict[str, JSON] | None = None
    vars: dict[str, JSON] | None = None
    params: dict[str, JSON] | None = None
    meta: dict[str, JSON] | None = None
    state: str | list[str] | None = None
    # targeting, counted per process over requests that match everything else
    nth: int | None = None
    every: int | None = None
    first: int | None = None
    after: int | None = None
    probability: float | None = None


@frozen(repr=False, eq=False)
class Rule(Model):
    """One scripted reply: if ``when`` matches, run ``steps``.

    ``sequence`` instead gives successive replies for successive matching calls
    (stays at the last one, or starts over with ``cycle: true``).
    """

    when: Match = Match()
    steps: list[Step] | None = None
    sequence: list[list[Step]] | None = None
    cycle: bool = False
    name: str | None = None


# ---------------------------------------------------------------- primitives


@frozen(repr=False, eq=False)
class Icon(Model):
    src: str
    mimeType: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


@frozen(repr=False, eq=False)
class Tool(Model):
    name: str
    replies: list[Rule] = attrs.Factory(list)
    title: str | None = None
    description: str | None = None
    inputSchema: dict[str, JSON] = attrs.Factory(lambda: {"type": "object"})
    outputSchema: dict[str, JSON] | None = None
    annotations: dict[str, JSON] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, JSON] | None = _meta_field()
    states: list[str] | None = None
    # validate tools/call arguments against inputSchema (None: the scenario's protocol.validateInput)
    validateInput: bool | None = None


@frozen(repr=False, eq=False)
class PromptArgument(Model):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False


@frozen(repr=False, eq=False)
class Prompt(Model):
    name: str
    replies: list[Rule] = attrs.Factory(list)
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, JSON] | None = _meta_field()
    states: list[str] | None = None


@frozen(repr=False, eq=False)
class Resource(Model):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    size: int | None = None
    annotations: dict[str, JSON] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, JSON] | None = _meta_field()
    text: str | None = None
    blob: str | None = None  # base64
    file: str | None = None  # path relative to the scenario's folder
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None
    replies: list[Rule] = attrs.Factory(list)
    states: list[str] | None = None


@frozen(repr=False, eq=False)
class ResourceTemplate(Model):
    uriTemplate: str
    name: str
    replies: list[Rule] = attrs.Factory(list)
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    annotations: dict[str, JSON] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, JSON] | None = _meta_field()
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None
    states: list[str] | None = None


@frozen(repr=False, eq=False)
class Completion(Model):
    """Completion values for one argument of a prompt or resource template."""

    argument: str
    prompt: str | None = None
    resourceTemplate: str | None = None
    values: list[str] = attrs.Factory(list)
    # matched (like `when`) against the request's context ({arguments: {...}}: the values already chosen)
    context: dict[str, JSON] | None = None


@frozen(repr=False, eq=False)
class MethodOverride(Model):
    """Rules for any method, consulted before the built-in behaviour.

    This is how a scenario scripts ``server/discover`` faults, answers an
    unknown method, or breaks a list result on purpose.
    """

    method: str
    replies: list[Rule] = attrs.Factory(list)


@frozen(repr=False, eq=False)
class Timer(Model):
    """A timed event on every open subscription stream.

    ``count`` events, the first ``after`` the acknowledgement, then one every
    ``every``; each goes to the stream only if it asked for that kind.
    """

    emit: EmitSpec
    after: Duration = Duration(0.0)
    every: Duration | None = None
    count: int = 1


@frozen(repr=False, eq=False)
class Subscriptions(Model):
    """What happens on every ``subscriptions/listen`` stream after the ack."""

    timeline: list[Step] = attrs.Factory(list)
    timers: list[Timer] = attrs.Factory(list)


# ---------------------------------------------------------------- server


@frozen(repr=False, eq=False)
class Server(Model):
    name: str = "mockmcp"
    version: str = "0.1.0"
    title: str | None = None
    description: str | None = None
    websiteUrl: str | None = None
    icons: list[Icon] | None = None
    instructions: str | None = None


@frozen(repr=False, eq=False)
class CacheHints(Model):
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None


@frozen(repr=False, eq=False)
class Cache(Model):
    """Caching hints for cacheable results; per-method blocks override the defaults."""

    ttlMs: int = 60_000
    cacheScope: Literal["public", "private"] = "public"
    discover: CacheHints | None = None
    tools: CacheHints | None = None
    prompts: CacheHints | None = None
    resources: CacheHints | None = None
    resourceTemplates: CacheHints | None = None
    read: CacheHints | None = None


@frozen(repr=False, eq=False)
class ExitAfter(Model):
    """Exit once ``messages`` lines have been written to stdout (counted per process)."""

    messages: int
    status: int = 1


@frozen(repr=False, eq=False)
class Protocol(Model):
    """How the server speaks the protocol (the deliberate deviations live here too)."""

    versions: list[str] = attrs.Factory(lambda: ["2026-07-28"])
    era: Literal["modern", "legacy", "dual"] = "modern"
    discover: Literal["normal", "method-not-found", "invalid-params", "silent", "exit"] = "normal"
    rejectFirst: bool = False  # answer the first request with -32022 (version-retry flows)
    serverInfo: bool = True
    parseErrorIdNull: bool = False
    checkCapabilities: bool = True
    stateKey: str | None = None
    pageSize: int | None = None
    ignoreEof: bool = False
    ignoreSigterm: bool = False
    exitAfter: ExitAfter | None = None  # die after N lines written, whatever they were
    # tools/call arguments that break the tool's inputSchema get a tool error (isError) before any rule
    validateInput: bool = True
    # A request no rule answers: the built-in answer, or (fail: a cassette's replay) the near-miss
    # error; the protocol's own plumbing (protocol.BUILTIN_WHEN_UNMATCHED) is answered either way.
    unmatched: Literal["builtin", "fail"] = "builtin"


@frozen(repr=False, eq=False)
class StateMachine(Model):
    initial: str = "start"
    states: list[str] | None = None


@frozen(repr=False, eq=False)
class Expectation(Model):
    """What the client must do (checked at exit; see docs/verification.md).

    Which requests count: ``method``, and optionally the tool/prompt ``name``,
    the resource ``uri``, ``arguments`` and ``params`` matchers (as in
    ``when``). How often: ``atLeast``/``atMost`` (combinable), ``exactly`` or
    ``never``; with none of them, at least once. Order: ``before``/``after``
    name another expectation's ``id``. Retries after ``input_required`` count
    only with ``retries: true`` (a multi-round call is one call by default).
    ``headers`` matches the HTTP request's headers (``mockmcp run --http``;
    names compared regardless of case, values with the same matchers).
    """

    method: str
    name: str | None = None
    uri: str | None = None
    arguments: dict[str, JSON] | None = None
    params: dict[str, JSON] | None = None
    atLeast: int | None = None
    atMost: int | None = None
    exactly: int | None = None
    never: bool = False
    before: str | None = None  # the `id` of another expectation whose first request must come later
    after: str | None = None  # the `id` of another expectation whose first request must come earlier
    retries: bool = False
    id: str | None = None
    headers: dict[str, JSON] | None = None  # HTTP request headers (names in any case); none on stdio


@frozen(repr=False, eq=False)
class Scenario(Model):
    mockmcp: Literal[1]
    description: str = ""
    server: Server = Server()
    protocol: Protocol = Protocol()
    capabilities: dict[str, JSON] | None = None
    cache: Cache = Cache()
    state: StateMachine = StateMachine()
    tools: list[Tool] = attrs.Factory(list)
    prompts: list[Prompt] = attrs.Factory(list)
    resources: list[Resource] = attrs.Factory(list)
    resourceTemplates: list[ResourceTemplate] = attrs.Factory(list)
    completions: list[Completion] = attrs.Factory(list)
    subscriptions: Subscriptions = Subscriptions()
    methods: list[MethodOverride] = attrs.Factory(list)
    expectations: list[Expectation] = attrs.Factory(list)


# The rarely used step classes, ``Step`` and the step tables live in ``extrasteps``
# (see its docstring): imported on the first use of one of these names, and
# adding them all to this module's namespace when it is.
if TYPE_CHECKING:
    from .extrasteps import *  # noqa: F403
    from .extrasteps import STEP_KEYS, STEP_TYPES, TERMINAL_STEPS, Step
else:

    def __getattr__(name: str) -> Any:
        if name in _LATER:
            from . import extrasteps  # noqa: F401  (it adds its names here)

            return globals()[name]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LATER = frozenset({
    "SetStateStep", "EndSubscriptionSpec", "EndSubscriptionStep", "RawStep", "RawBytesStep", "HangStep", "ExitSpec",
    "ExitStep", "DribbleSpec", "DribbleStep", "StderrStep", "StopReadingStep", "CloseStdoutStep", "RequestSpec",
    "RequestStep", "HugeSpec", "HugeStep", "HttpSpec", "HttpStep", "ForwardStep",
    "Step", "STEP_TYPES", "STEP_KEYS", "TERMINAL_STEPS",
})
