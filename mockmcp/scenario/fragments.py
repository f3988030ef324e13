"""Scenario fragments given at run time, checked exactly like a scenario file.

The control channel adds a tool, prompt, resource or template, or arms a
reply, from JSON a test sends. Each fragment is wrapped into a one-item
scenario and goes the loader's way: the fast structure functions
(``quickload``) first, the plain cattrs path (``plainload``) when they decline
or when anything is wrong, then ``check.check`` over the running scenario
with the fragment in place (so duplicates, undeclared states and reply costs
are judged as in a file). Problems come back by JSON path inside the control
request (``$.params.definition.inputSchema``), in the loader's words.
"""

from __future__ import annotations

from typing import Any

import attrs

from mockmcp.scenario import check
from mockmcp.wire import errors
from mockmcp.scenario.model import base as model
from mockmcp.scenario import quickload
from mockmcp.scenario import scalars
from mockmcp.scenario.problems import LoadError, format_path
from mockmcp.scenario.model.tasks import TaskSpec, TaskStep

Path_ = tuple[Any, ...]

# kind -> (scenario field, key field)
KINDS: dict[str, tuple[str, str]] = {
    "tool": ("tools", "name"),
    "prompt": ("prompts", "name"),
    "resource": ("resources", "uri"),
    "template": ("resourceTemplates", "uriTemplate"),
}


class InvalidFragment(errors.InvalidParams):
    """A definition or rule the loader would refuse in a file; ``data.problems`` lists them all."""

    def __init__(self, what: str, problems: list[tuple[Path_, str]], *, request_id: Any) -> None:
        listed = [{"path": format_path(path), "message": message} for path, message in problems]
        first = listed[0]
        more = f" (and {len(listed) - 1} more)" if len(listed) > 1 else ""
        super().__init__(
            f"Invalid params: invalid {what}: {first['message']} (at {first['path']}){more}",
            data={"problems": listed},
            request_id=request_id,
        )


def _structure(data: dict[str, Any]) -> tuple[model.Scenario | None, list[tuple[Path_, str]]]:
    scenario = quickload.structure(data)
    if scenario is not None:
        return scenario, []
    from mockmcp.scenario import plainload  # only when the fast path declines (imports yaml and cattrs

    try:
        return plainload.structure(data, {}, "<control>"), []
    except LoadError as exc:
        return None, [(pr.path, pr.message) for pr in exc.problems]


def _rebase(found: list[tuple[Path_, str]], prefix: Path_, at: Path_) -> list[tuple[Path_, str]]:
    """Problems under ``prefix`` (scenario paths) moved under ``at`` (paths in the control request)."""
    n = len(prefix)
    return [(at + path[n:], message) for path, message in found if path[:n] == prefix]


def primitive(
    scenario: model.Scenario, kind: str, definition: Any, *, replace: bool, at: Path_, request_id: Any
) -> tuple[model.Scenario, list[str]]:
    """``scenario`` with ``definition`` added (or put in place of the item with its key), and
    the checker's warnings; ``InvalidFragment`` if a scenario file with it would not load."""
    field, key = KINDS[kind]
    what = f"{kind} definition"
    if type(definition) is not dict:
        raise InvalidFragment(what, [(at, f"expected a mapping, got {scalars.show(definition)}")], request_id=request_id)
    if kind == "resource" and "file" in definition:
        problem = "a resource given at run time cannot reference a file; give its text or blob"
        raise InvalidFragment(what, [(at + ("file",), problem)], request_id=request_id)
    frag, problems = _structure({"mockmcp": 1, field: [definition]})
    if frag is None:
        raise InvalidFragment(what, _rebase(problems, (field, 0), at) or [(at, problems[0][1])], request_id=request_id)
    item = getattr(frag, field)[0]
    items = list(getattr(scenario, field))
    index = len(items)
    if replace:
        index = next((i for i, x in enumerate(items) if getattr(x, key) == getattr(item, key)), -1)
        if index < 0:
            raise errors.InvalidParams("replace needs an existing item", request_id=request_id)  # callers check first
        items[index] = item
    else:
        items.append(item)
    changes: dict[str, Any] = {field: items}
    candidate = attrs.evolve(scenario, **changes)
    checked, found = check.check(candidate)
    mine = [f for f in found if f.path[:2] == (field, index)]
    bad = [(f.path, f.message) for f in mine if f.level == "error"]
    if bad:
        raise InvalidFragment(what, _rebase(bad, (field, index), at), request_id=request_id)
    return checked, [f"{f.message} (at {format_path(at + f.path[2:])})" for f in mine]


def rule(
    scenario: model.Scenario,
    method: str,
    when: Any,
    steps: Any,
    *,
    at_when: Path_,
    at_steps: Path_,
    request_id: Any,
    what: str = "armed reply",
) -> model.Rule:
    """A ``methods:`` rule for ``method`` built from ``when`` and ``steps`` (``None``: only the
    ``when`` is wanted, and only its problems are reported), checked as in a scenario file."""
    body: dict[str, Any] = {"when": when, "steps": steps if steps is not None else []}
    frag, problems = _structure({"mockmcp": 1, "methods": [{"method": method, "replies": [body]}]})
    prefix: Path_ = ("methods", 0, "replies", 0)
    if frag is None:
        found = _rebase(problems, prefix + ("when",), at_when) + _rebase(problems, prefix + ("steps",), at_steps)
        if steps is None:
            found = _rebase(problems, prefix + ("when",), at_when)
        raise InvalidFragment(what, found or [(at_when, problems[0][1])], request_id=request_id)
    new = frag.methods[0]
    candidate = attrs.evolve(scenario, methods=[new, *scenario.methods])
    _, all_found = check.check(candidate)
    bad = [(f.path, f.message) for f in all_found if f.level == "error"]
    found = _rebase(bad, prefix + ("when",), at_when)
    if steps is not None:
        found += _rebase(bad, prefix + ("steps",), at_steps)
    if found:
        raise InvalidFragment(what, found, request_id=request_id)
    return new.replies[0]


# A task change given at run time, as the one phase and outcome of a one-tool scenario's task
# step; problems found there are moved to the control request's own keys.
_TASK_AT: Path_ = ("tools", 0, "replies", 0, "steps", 0, "task")
_TASK_PLACES: dict[Path_, Path_] = {
    ("phases", 0, "inputRequests"): ("params", "inputRequests"),
    ("phases", 0, "statusMessage"): ("params", "statusMessage"),
    ("phases", 0, "pollIntervalMs"): ("params", "pollIntervalMs"),
    ("outcome", 0, "result"): ("params", "result"),
    ("outcome", 0, "error"): ("params", "error"),
    ("phases", 0): ("params",),  # (the rest: the request's params as a whole)
    ("outcome", 0): ("params",),
    (): ("params",),
}


def task_change(phase: dict[str, Any] | None, outcome: dict[str, Any] | None, *, request_id: Any) -> TaskSpec:
    """The phase (status, message, input requests, poll interval) and outcome step (a ``result``
    or an ``error`` step) the control channel puts a task in, structured and checked as the
    ``phases`` and ``outcome`` of a ``task`` step in a file; ``InvalidFragment`` otherwise."""
    task: dict[str, Any] = {"phases": [phase] if phase is not None else []}
    if outcome is not None:
        task["outcome"] = [outcome]
    data = {"mockmcp": 1, "tools": [{"name": "control", "replies": [{"steps": [{"task": task}]}]}]}
    frag, problems = _structure(data)
    if frag is None:
        raise InvalidFragment("task change", _task_places(problems) or [(("params",), problems[0][1])], request_id=request_id)
    _, found = check.check(frag)
    bad = _task_places([(f.path, f.message) for f in found if f.level == "error"])
    if bad:
        raise InvalidFragment("task change", bad, request_id=request_id)
    steps = frag.tools[0].replies[0].steps
    assert steps is not None and isinstance(steps[0], TaskStep)
    return steps[0].task


def _task_places(found: list[tuple[Path_, str]]) -> list[tuple[Path_, str]]:
    out = []
    for path, message in found:
        for inner, at in _TASK_PLACES.items():
            prefix = _TASK_AT + inner
            if path[: len(prefix)] == prefix:
                out.append((at + path[len(prefix) :], message))
                break
    return out
