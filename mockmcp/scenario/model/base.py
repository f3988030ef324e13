"""The scenario model: frozen attrs classes that describe what the mock does.

This module never sees YAML; ``loader`` turns a file into these objects with one
strict cattrs converter, and ``schema`` derives the editor JSON Schema from them.
Field names are the scenario keys (camelCase, like the MCP wire format); a field
whose YAML key cannot be a Python name carries ``metadata={"key": ...}``.

Steps are single-key mappings (``{sleep: 20ms}``, ``{result: {...}}``); each
step class has exactly one required field, named like its key, which is how the
loader tells them apart (each step class also says it as ``KEY``).

This module holds the scenario's structure and the four steps every scenario may use
(``result``, ``text``, ``error``, ``sleep``); the other classes are in parts of their
own (this package's other modules), imported only where a class of theirs is needed: creating an
attrs class compiles its ``__init__`` and costs about 200 µs, and a warm spawn
unpickles its scenario, which imports only the parts whose classes it holds (a pickle
names each class's own module). Creating every class cost about 8% of a warm spawn.
The annotations here that name a part's class (``list[Step]``) are strings at run
time; ``catalog``, which imports every part, resolves them for the code that
reads them (the loaders, the checks, the schema).
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
    """The base of every model class (for a step class, ``KEY``: its scenario key, and
    ``FINAL``: is it a step after which nothing more of its list runs? the steps that
    answer, and ``endSubscription``; class attributes, so that a walk over steps needs
    no part of the model imported), and one ``__repr__``, ``__eq__`` and ``__hash__``
    for all of them, doing what attrs generates for a frozen class (the same text,
    the same comparisons field by field), instead of attrs generating and compiling
    them for each of the 52 classes: that was half of this module's import time,
    and every spawn imports it (``tests/scenario/test_model.py`` compares them with attrs')."""

    __slots__ = ()
    KEY = ""  # (no annotations: the type hints of the classes stay their fields)
    FINAL = False

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


# ---------------------------------------------------------------- steps


@frozen(repr=False, eq=False)
class ErrorSpec(Model):
    code: int
    message: str | None = None  # omitted or null: the standard message for the code (a real null needs a raw step)
    data: JSON = None


@frozen(repr=False, eq=False)
class ResultStep(Model):
    """A complete result; ``resultType`` and serverInfo are filled in."""

    KEY = "result"
    FINAL = True

    result: dict[str, JSON]


@frozen(repr=False, eq=False)
class TextStep(Model):
    """Shorthand for a complete result holding one text (tool, prompt or resource)."""

    KEY = "text"
    FINAL = True

    text: str


@frozen(repr=False, eq=False)
class ErrorStep(Model):
    KEY = "error"
    FINAL = True

    error: ErrorSpec


@frozen(repr=False, eq=False)
class SleepStep(Model):
    KEY = "sleep"

    sleep: Duration | RandomDelay


# ---------------------------------------------------------------- rules


@frozen(repr=False, eq=False)
class Match(Model):
    """``when``: which requests a rule answers. Every given key must match.

    Mappings match as subsets (extra keys in the request are fine; none under
    ``exactArguments``, at any depth); lists and scalars match exactly;
    ``{$regex: ...}``, ``{$present: true}``, ``{$absent: true}``, ``{$type: string}``,
    ``{$contains: ...}``, ``{$anyOf: [...]}`` and ``{$literal: value}`` are matchers.
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
    auth: Auth | None = None  # authorization over HTTP (the model part ``auth``)


# ---------------------------------------------------------------- the other parts

if TYPE_CHECKING:  # the annotations above that name a part's class (resolved by ``catalog``)
    from mockmcp.scenario.model.notify import RandomDelay, Timer
    from mockmcp.scenario.model.options import CacheHints, ExitAfter, Expectation, Icon, MethodOverride
    from mockmcp.scenario.model.catalog import Step
    from mockmcp.scenario.model.auth import Auth
