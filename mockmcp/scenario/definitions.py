"""What the primitives of a scenario look like on the wire.

Tool, prompt, resource and template definitions as ``*/list`` results carry
them and the server capabilities a scenario implies (RFC 6570 URI templates are
``uritemplates``'). Pure functions of the model (sans-I/O).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p

if TYPE_CHECKING:
    from mockmcp.scenario.model.options import Icon
    from mockmcp.scenario.model.tasks import TaskSpec


def iter_rules(s: model.Scenario) -> Iterator[tuple[tuple[Any, ...], str, model.Rule]]:
    """Every rule with its path and the method it answers (here rather than in ``check``:
    the journal's rule labels and the counters need it at run time, and ``check`` is
    for loading)."""
    for i, t in enumerate(s.tools):
        for j, r in enumerate(t.replies):
            yield ("tools", i, "replies", j), p.TOOLS_CALL, r
    for i, pr in enumerate(s.prompts):
        for j, r in enumerate(pr.replies):
            yield ("prompts", i, "replies", j), p.PROMPTS_GET, r
    for i, res in enumerate(s.resources):
        for j, r in enumerate(res.replies):
            yield ("resources", i, "replies", j), p.RESOURCES_READ, r
    for i, tm in enumerate(s.resourceTemplates):
        for j, r in enumerate(tm.replies):
            yield ("resourceTemplates", i, "replies", j), p.RESOURCES_READ, r
    for i, o in enumerate(s.methods):
        for j, r in enumerate(o.replies):
            yield ("methods", i, "replies", j), o.method, r


def _walk(steps: list[Any], specs: list[TaskSpec]) -> bool:
    """Append the ``task:`` steps of ``steps`` (loops included) to ``specs``; do any of them log?"""
    logs = False
    for step in steps:
        key = step.KEY
        if key == "task":
            specs.append(step.task)
        elif key == "log":
            logs = True
        elif key == "loop":
            logs = _walk(step.loop.steps, specs) or logs
    return logs


def scenario_facts(scenario: model.Scenario) -> tuple[list[TaskSpec], bool]:
    """Every ``task:`` step of the replies, in file order (a stored task names its spec by
    index), and whether any reply or the timeline logs.

    One tight walk: it runs at every start-up, and large scenarios have a hundred
    thousand rules (a walk per fact and a call per rule were 100 ms of a warm start
    of 100,000 rules)."""
    specs: list[TaskSpec] = []
    logs = _walk(scenario.subscriptions.timeline, [])
    for items in (scenario.tools, scenario.prompts, scenario.resources, scenario.resourceTemplates, scenario.methods):
        for item in items:
            for rule in item.replies:
                steps: Any = rule.steps  # (steps are told apart by KEY below, which mypy cannot narrow by)
                if steps:
                    for step in steps:  # (the walk of _walk, inlined for the common one-step rule)
                        key = step.KEY  # (not the classes: naming one defines its part of the model)
                        if key == "task":
                            specs.append(step.task)
                        elif key == "log":
                            logs = True
                        elif key == "loop":
                            logs = _walk(step.loop.steps, specs) or logs
                if rule.sequence is not None:
                    for alt in rule.sequence:
                        logs = _walk(alt, specs) or logs
    return specs, logs


def derive_capabilities(scenario: model.Scenario, facts: tuple[list[TaskSpec], bool] | None = None) -> dict[str, Any]:
    """Server capabilities implied by what the scenario defines (``facts``: its ``scenario_facts``, if known)."""
    caps: dict[str, Any] = {}
    specs, logs = scenario_facts(scenario) if facts is None else facts
    if specs:
        caps["extensions"] = {p.TASKS_EXTENSION: {}}
    if logs:
        caps["logging"] = {}
    if scenario.completions:
        caps["completions"] = {}
    if scenario.prompts:
        caps["prompts"] = {"listChanged": True}
    if scenario.resources or scenario.resourceTemplates:
        caps["resources"] = {"subscribe": True, "listChanged": True}
    if scenario.tools:
        caps["tools"] = {"listChanged": True}
    return caps


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def icons(icons: list[Icon] | None) -> list[dict[str, Any]] | None:
    if icons is None:
        return None
    return [drop_none({"src": i.src, "mimeType": i.mimeType, "sizes": i.sizes, "theme": i.theme}) for i in icons]


def _definition(item: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """The wire form of a primitive: its listed fields that are set, ``meta`` as ``_meta``."""
    out: dict[str, Any] = {}
    for name in fields:
        value = getattr(item, name)
        if value is None:
            continue
        if name == "icons":
            value = icons(value)
        out["_meta" if name == "meta" else name] = value
    return out


_TOOL_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "meta")
_PROMPT_FIELDS = ("name", "title", "description", "arguments", "icons", "meta")
_RESOURCE_FIELDS = ("uri", "name", "title", "description", "mimeType", "size", "annotations", "icons", "meta")
_TEMPLATE_FIELDS = ("uriTemplate", "name", "title", "description", "mimeType", "annotations", "icons", "meta")


def tool_definition(t: model.Tool) -> dict[str, Any]:
    return _definition(t, _TOOL_FIELDS)


# Keywords that assert nothing about an instance (annotations, the dialect).
_ANNOTATIONS = frozenset({"title", "description", "examples", "default", "$comment", "deprecated", "readOnly", "writeOnly", "$schema"})


def validates_input(tool: model.Tool, scenario_default: bool) -> bool:
    """Are this tool's call arguments validated? Only when switched on and its schema
    asks more of them than being an object (the default ``{type: object}`` needs no
    validator, so a scenario of such tools never imports one)."""
    on = scenario_default if tool.validateInput is None else tool.validateInput
    return on and not (tool.inputSchema.get("type") == "object" and all(k == "type" or k in _ANNOTATIONS for k in tool.inputSchema))


def prompt_definition(pr: model.Prompt) -> dict[str, Any]:
    out = _definition(pr, _PROMPT_FIELDS)
    if pr.arguments is not None:
        out["arguments"] = [
            drop_none({"name": a.name, "title": a.title, "description": a.description, "required": a.required or None})
            for a in pr.arguments
        ]
    return out


def resource_definition(r: model.Resource) -> dict[str, Any]:
    return _definition(r, _RESOURCE_FIELDS)


def template_definition(t: model.ResourceTemplate) -> dict[str, Any]:
    return _definition(t, _TEMPLATE_FIELDS)

