"""The request context: what one request says, decoded once, and what its handling learns.

Handlers, rule selection, step expansion and templates all look at the same
request; ``RequestContext`` holds it with typed fields instead of a free
dict. What handling learns on the way (a resource template's variables, the
MRTR round and answers read from ``requestState``, a loop's index, named
state) is set through methods, which keep ``scope()`` (the namespace
templates and ``when`` matching read) in step. Sans-I/O.
"""

from __future__ import annotations

import enum
from operator import attrgetter
from typing import Any, Callable

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario import templates
from mockmcp.scenario.templates import EFFECTS


class Mode(enum.Enum):
    """What a context's steps answer: a request, a subscription stream, or a notification (no id)."""

    REQUEST = "request"
    SUBSCRIPTION = "subscription"
    NOTIFICATION = "notification"


class Reask:
    """A retry that left some asked inputs unanswered: ask again for those only.

    This module's classes are plain slotted classes: attrs would compile their
    methods on every spawn's import, and ``RequestContext`` is made per request.
    Treat as immutable.
    """

    __slots__ = ("round", "user_state", "requests", "answers")

    def __init__(self, round: int, user_state: Any, requests: dict[str, Any], answers: dict[str, Any]) -> None:
        self.round = round
        self.user_state = user_state  # the scenario's own requestState text of that round
        self.requests = requests  # the input requests still unanswered
        self.answers = answers  # the answers given so far in this round

    def __eq__(self, other: object) -> bool:
        if type(other) is not Reask:
            return NotImplemented
        return (self.round, self.user_state, self.requests, self.answers) == (
            other.round, other.user_state, other.requests, other.answers)

    __hash__ = None  # type: ignore[assignment]  # holds dicts

    def __repr__(self) -> str:
        return f"Reask(round={self.round!r}, user_state={self.user_state!r}, requests={self.requests!r}, answers={self.answers!r})"


_NO_VALUES: dict[str, Any] = {}  # shared default of vars and input_responses: replaced, never mutated


class RequestContext:
    """One request's context; made once per request on the hot path, so its init is written out."""

    __slots__ = (
        "request", "meta", "state", "id", "method", "params", "arguments", "vars", "round",
        "input_responses", "missing_inputs", "request_state", "index", "reask", "effects", "responses", "_scope",
    )

    request: jsonrpc.Request
    meta: dict[str, Any]
    state: str
    # The request's own fields, copied once (read on every step of the hot path).
    id: Any
    method: str
    params: dict[str, Any]
    arguments: dict[str, Any]  # params.arguments when it is an object, else {}
    vars: dict[str, Any]
    round: int
    input_responses: dict[str, Any]
    missing_inputs: list[str] | None
    request_state: Any  # the scenario's requestState text carried by a retry
    index: int | None  # the repetition of the innermost loop being expanded
    reask: Reask | None
    effects: Any  # what uuid(), now() and counter() read (the engine's Effects), or None
    responses: dict[str, Any]  # the client's answers to the server's requests (legacy `request` steps)
    _scope: dict[str, Any] | None

    def __init__(self, request: jsonrpc.Request, meta: dict[str, Any], state: str, effects: Any = None) -> None:
        self.request = request
        self.effects = effects
        self.responses = _NO_VALUES
        self.meta = meta
        self.state = state
        self.id = request.id
        self.method = request.method
        params = self.params = request.params
        args = params.get("arguments")
        self.arguments = args if type(args) is dict else _NO_VALUES
        self.vars = _NO_VALUES
        self.round = 1
        self.input_responses = _NO_VALUES
        self.missing_inputs = None
        self.request_state = None
        self.index = None
        self.reask = None
        self._scope = None

    @property
    def name(self) -> Any:
        return self.params.get("name")

    @property
    def uri(self) -> Any:
        return self.params.get("uri")

    # ------------------------------------------------------------ what handling learns

    def set_vars(self, values: dict[str, Any]) -> None:
        self.vars = values
        self._scope = None

    def set_rounds(
        self,
        round: int,
        responses: dict[str, Any],
        *,
        missing: list[str] | None = None,
        request_state: Any = None,
        reask: Reask | None = None,
    ) -> None:
        self.round = round
        self.input_responses = responses
        self.missing_inputs = missing
        self.request_state = request_state
        self.reask = reask
        self._scope = None

    def set_response(self, name: str, answer: dict[str, Any]) -> None:
        """The client answered (or did not answer) the server's request ``name``."""
        self.responses = {**self.responses, name: answer}
        if self._scope is not None:
            self._scope["responses"] = self.responses

    def set_state(self, state: str) -> None:
        self.state = state
        if self._scope is not None:
            self._scope["state"] = state

    def set_index(self, index: int | None) -> None:
        self.index = index
        if self._scope is not None:
            self._scope["index"] = index

    def number(self, value: Any) -> Any:
        """A number a step writes as such or as a template; a request value that is no number -> -32602."""
        if type(value) is not str:
            return value
        rendered = templates.render(value, self.scope())
        if type(rendered) in (int, float):
            return rendered
        try:
            return templates.to_number(rendered)
        except (templates.TemplateError, ValueError):
            raise errors.InvalidParams(f"Invalid params: {rendered!r} is not a number (from {value!r})", request_id=self.id) from None

    # ------------------------------------------------------------ the template namespace

    def scope(self) -> dict[str, Any]:
        """The names templates and ``when`` conditions see (built once, kept in step)."""
        scope = self._scope
        if scope is None:
            params = self.params
            scope = self._scope = {
                "id": self.id,
                "method": self.method,
                "params": params,
                "meta": self.meta,
                "arguments": self.arguments,
                "name": params.get("name"),
                "uri": params.get("uri"),
                "vars": self.vars,
                "round": self.round,
                "inputResponses": self.input_responses,
                "state": self.state,
            }
            if self.effects is not None:
                scope[EFFECTS] = self.effects
            if self.responses:
                scope["responses"] = self.responses
            if self.index is not None:
                scope["index"] = self.index
            if self.missing_inputs is not None:
                scope["missingInputs"] = self.missing_inputs
                scope["requestState"] = self.request_state
        return scope


def _param(key: str) -> Callable[[RequestContext], Any]:
    return lambda ctx: ctx.params.get(key)


ROOTS: dict[str, Callable[[RequestContext], Any]] = {
    "id": attrgetter("id"), "method": attrgetter("method"), "params": attrgetter("params"), "meta": attrgetter("meta"),
    "arguments": attrgetter("arguments"), "name": _param("name"), "uri": _param("uri"), "vars": attrgetter("vars"),
    "round": attrgetter("round"), "inputResponses": attrgetter("input_responses"), "state": attrgetter("state"),
}
"""What the first name of a template path reads, taken from the context itself: what
``scope()`` holds under that name, without building the scope (a compiled reply's
holes read them per request; ``tests/core/test_core_units.py`` checks both agree). The
names ``scope()`` adds only sometimes (``index``, ``responses``, ...) are not here."""
