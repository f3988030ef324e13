"""The built-in answer of each method of the revision, one handler per method.

``HANDLERS`` maps a method to a function ``(engine, request, ctx) -> Plan``;
the engine calls it once ``_meta`` and the version are checked and no
``methods:`` override answered. Handlers raise ``ClientError`` for client
mistakes (unknown tool, bad cursor, missing argument) and hand scripted rules
to ``Engine._answer``. Sans-I/O like the engine.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from . import errors, jsonrpc, model, protocol as p, templates
from .actions import Action, Emit, Park, Plan, Sleep
from .definitions import drop_none, prompt_definition, resource_definition, template_definition, tool_definition

if TYPE_CHECKING:
    from .engine import Engine

# The server capability each method needs (without it: -32601).
CAPABILITY_FOR = {
    p.TOOLS_LIST: "tools",
    p.TOOLS_CALL: "tools",
    p.PROMPTS_LIST: "prompts",
    p.PROMPTS_GET: "prompts",
    p.RESOURCES_LIST: "resources",
    p.RESOURCES_READ: "resources",
    p.RESOURCE_TEMPLATES_LIST: "resources",
    p.COMPLETE: "completions",
}


class Subscription:
    __slots__ = ("id", "honored")

    def __init__(self, id: Any, honored: dict[str, Any]) -> None:
        self.id = id
        self.honored = honored

    def wants(self, event: str, uri: str | None) -> bool:
        field = p.EVENT_FILTER_FIELD[event]
        if event == "resources/updated":
            return uri in (self.honored.get(field) or ())
        return bool(self.honored.get(field))


def _paginate(engine: Engine, req: jsonrpc.Request, items: list[dict[str, Any]], key: str, kind: str) -> Plan:
    cursor = req.params.get("cursor")
    start = 0
    if cursor is not None:
        start = _decode_cursor(cursor, kind, len(items), req.id)
    size = engine.protocol.pageSize or len(items) or 1
    page = items[start : start + size]
    result: dict[str, Any] = {key: page}
    if start + size < len(items):
        result["nextCursor"] = _encode_cursor(kind, start + size)
    return Plan(req.id, [engine._final(req, engine._complete(req, result))], req.method, None, True)


def _encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"mockmcp:{kind}:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: Any, kind: str, total: int, rid: Any) -> int:
    if type(cursor) is str:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
            tag, k, offset = raw.split(":")
            if tag == "mockmcp" and k == kind and offset.isdigit() and 0 < int(offset) <= total:
                return int(offset)
        except (ValueError, UnicodeDecodeError):
            pass
    raise errors.InvalidParams(f"Invalid params: invalid cursor {cursor!r}", data={"cursor": cursor}, request_id=rid)


def _visible(engine: Engine, item: Any) -> bool:
    return item.states is None or engine.state in item.states


def _cached_defs(engine: Engine, items: list[Any], make: Any) -> list[dict[str, Any]]:
    out = []
    for item in items:
        if _visible(engine, item):
            d = engine._definitions.get(id(item))
            if d is None:
                d = engine._definitions[id(item)] = make(item)
            out.append(d)
    return out


def _discover(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    result: dict[str, Any] = {"supportedVersions": list(engine.protocol.versions), "capabilities": engine.capabilities}
    if engine.scenario.server.instructions is not None:
        result["instructions"] = engine.scenario.server.instructions
    return Plan(req.id, [engine._final(req, engine._complete(req, result))], req.method, None, True)


def _tools_list(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    return _paginate(engine, req, _cached_defs(engine, engine.scenario.tools, tool_definition), "tools", "tools")


def _prompts_list(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    return _paginate(engine, req, _cached_defs(engine, engine.scenario.prompts, prompt_definition), "prompts", "prompts")


def _resources_list(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    return _paginate(engine, req, _cached_defs(engine, engine.scenario.resources, resource_definition), "resources", "resources")


def _templates_list(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    defs = _cached_defs(engine, engine.scenario.resourceTemplates, template_definition)
    return _paginate(engine, req, defs, "resourceTemplates", "templates")


def _require_str(req: jsonrpc.Request, key: str) -> str:
    value = req.params.get(key)
    if type(value) is not str:
        what = "missing" if value is None else "must be a string"
        raise errors.InvalidParams(f"Invalid params: {key!r} {what}", request_id=req.id)
    return value


def _tools_call(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    name = _require_str(req, "name")
    tool = engine._tools.get(name)
    if tool is None or (tool.states is not None and engine.state not in tool.states):
        engine.note_unknown(req, "tool", name, [t.name for t in engine.scenario.tools if _visible(engine, t)])
        raise errors.InvalidParams(f"Unknown tool: {name}", data={"name": name}, request_id=req.id)
    args = req.params.get("arguments")
    if args is not None and type(args) is not dict:
        raise errors.InvalidParams("Invalid params: 'arguments' must be an object", request_id=req.id)
    engine._rounds(req, ctx)
    if not tool.replies:
        return Plan(req.id, [engine._final(req, engine._complete(req, {"content": []}))], req.method, None, True)
    return engine._answer(req, ctx, tool.replies, "tool", name)


def _prompts_get(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    name = _require_str(req, "name")
    prompt = engine._prompts.get(name)
    if prompt is None or not _visible(engine, prompt):
        engine.note_unknown(req, "prompt", name, [x.name for x in engine.scenario.prompts if _visible(engine, x)])
        raise errors.InvalidParams(f"Unknown prompt: {name}", data={"name": name}, request_id=req.id)
    args = req.params.get("arguments")
    if args is not None and (type(args) is not dict or any(type(v) is not str for v in args.values())):
        raise errors.InvalidParams("Invalid params: prompt 'arguments' must map names to strings", request_id=req.id)
    missing = [a.name for a in prompt.arguments or () if a.required and a.name not in (args or {})]
    if missing:
        raise errors.InvalidParams(
            f"Invalid params: missing required argument{'s' if len(missing) > 1 else ''} {', '.join(missing)} for prompt {name}",
            data={"missing": missing},
            request_id=req.id,
        )
    engine._rounds(req, ctx)
    if not prompt.replies:
        text = prompt.description or prompt.name
        result = {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        return Plan(req.id, [engine._final(req, engine._complete(req, result))], req.method, None, True)
    return engine._answer(req, ctx, prompt.replies, "prompt", name)


def _resources_read(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    uri = _require_str(req, "uri")
    res = engine._resources.get(uri)
    if res is not None and _visible(engine, res):
        engine._rounds(req, ctx)
        if res.replies:
            return engine._answer(req, ctx, res.replies, "resource", uri)
        content = drop_none({"uri": uri, "mimeType": res.mimeType, "text": res.text, "blob": res.blob})
        if "text" not in content and "blob" not in content:
            content["text"] = ""
        result = engine._complete(req, {"contents": [content]}, hints=(res.ttlMs, res.cacheScope))
        return Plan(req.id, [engine._final(req, result)], req.method, None, True)
    for pattern, tmpl in engine._templates:
        if not _visible(engine, tmpl):
            continue
        m = pattern.match(uri)
        if m:
            ctx["vars"] = m.groupdict()
            engine._rounds(req, ctx)
            if not tmpl.replies:
                break
            return engine._answer(req, ctx, tmpl.replies, "resource template", tmpl.uriTemplate)
    known = [r.uri for r in engine.scenario.resources if _visible(engine, r)]
    engine.note_unknown(req, "resource", uri, known + [t.uriTemplate for t in engine.scenario.resourceTemplates])
    raise errors.InvalidParams(f"Resource not found: {uri}", data={"uri": uri}, request_id=req.id)


def _complete_handler(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    ref = req.params.get("ref")
    argument = req.params.get("argument")
    if type(ref) is not dict or type(argument) is not dict or type(argument.get("name")) is not str:
        raise errors.InvalidParams("Invalid params: completion/complete needs 'ref' and 'argument.name'", request_id=req.id)
    value = argument.get("value", "")
    if type(value) is not str:
        raise errors.InvalidParams("Invalid params: 'argument.value' must be a string", request_id=req.id)
    kind = ref.get("type")
    if kind == "ref/prompt":
        target = ref.get("name")
        if type(target) is not str or target not in engine._prompts:
            raise errors.InvalidParams(f"Unknown prompt: {target}", request_id=req.id)
        found = [c for c in engine.scenario.completions if c.prompt == target and c.argument == argument["name"]]
    elif kind == "ref/resource":
        target = ref.get("uri")
        if type(target) is not str or not any(t.uriTemplate == target for t in engine.scenario.resourceTemplates) and target not in engine._resources:
            raise errors.InvalidParams(f"Unknown resource template: {target}", request_id=req.id)
        found = [c for c in engine.scenario.completions if c.resourceTemplate == target and c.argument == argument["name"]]
    else:
        raise errors.InvalidParams("Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'", request_id=req.id)
    values = [v for c in found for v in c.values if v.lower().startswith(value.lower())]
    result = {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}
    return Plan(req.id, [engine._final(req, engine._complete(req, result))], req.method, None, True)


def _listen(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
    wanted = req.params.get("notifications")
    if type(wanted) is not dict:
        raise errors.InvalidParams("Invalid params: subscriptions/listen needs a 'notifications' object", request_id=req.id)
    caps = engine.capabilities
    honored: dict[str, Any] = {}
    for field, cap in (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"), ("resourcesListChanged", "resources")):
        if wanted.get(field) is True and (caps.get(cap) or {}).get("listChanged"):
            honored[field] = True
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if type(uris) is not list or any(type(u) is not str for u in uris):
            raise errors.InvalidParams("Invalid params: resourceSubscriptions must be a list of URIs", request_id=req.id)
        if (caps.get("resources") or {}).get("subscribe"):
            honored["resourceSubscriptions"] = list(uris)
    engine.subscriptions[req.id] = Subscription(req.id, honored)
    ack = jsonrpc.notification(
        p.SUBSCRIPTIONS_ACKNOWLEDGED, {"_meta": {p.META_SUBSCRIPTION_ID: req.id}, "notifications": honored}
    )
    plan = engine._expand(req, ctx, engine.scenario.subscriptions.timeline, None, subscription=True)
    timers = engine.scenario.subscriptions.timers
    if timers:
        plan.actions = _with_timers(plan.actions, _timer_events(engine, req, ctx, timers))
    plan.actions.insert(0, engine._send(ack))
    plan.immediate = False
    return plan


def _timer_events(engine: Engine, req: jsonrpc.Request, ctx: dict[str, Any], timers: list[model.Timer]) -> list[tuple[float, Emit]]:
    """Every timed event of one stream as (seconds after the ack, event), in time order."""
    events = []
    scale = engine.time_scale
    for timer in timers:
        uri = templates.render(timer.emit.uri, ctx)
        every = timer.every.seconds if timer.every is not None else 0.0
        for n in range(timer.count):
            events.append(((timer.after.seconds + n * every) * scale, Emit(timer.emit.event, uri, req.id, True)))
    events.sort(key=lambda e: e[0])  # stable: timers written first win ties
    return events


def _with_timers(actions: list[Action], events: list[tuple[float, Emit]]) -> list[Action]:
    """Interleave timed events with a stream's timeline by splitting its sleeps.

    Events still due when the timeline parks are played before the park; events
    due after the timeline ends the stream are dropped with it.
    """
    out: list[Action] = []
    clock = 0.0
    i = 0
    for action in actions:
        if type(action) is Sleep:
            end = clock + action.seconds
            while i < len(events) and events[i][0] < end:
                at, emit = events[i]
                if at > clock:
                    out.append(Sleep(at - clock))
                    clock = at
                out.append(emit)
                i += 1
            if end > clock:
                out.append(Sleep(end - clock))
            clock = end
            continue
        if type(action) is Park:
            for at, emit in events[i:]:
                if at > clock:
                    out.append(Sleep(at - clock))
                    clock = at
                out.append(emit)
            i = len(events)
        else:
            while i < len(events) and events[i][0] <= clock:
                out.append(events[i][1])
                i += 1
        out.append(action)
    return out


HANDLERS = {
    p.DISCOVER: _discover,
    p.TOOLS_LIST: _tools_list,
    p.TOOLS_CALL: _tools_call,
    p.PROMPTS_LIST: _prompts_list,
    p.PROMPTS_GET: _prompts_get,
    p.RESOURCES_LIST: _resources_list,
    p.RESOURCES_READ: _resources_read,
    p.RESOURCE_TEMPLATES_LIST: _templates_list,
    p.COMPLETE: _complete_handler,
    p.SUBSCRIPTIONS_LISTEN: _listen,
}
