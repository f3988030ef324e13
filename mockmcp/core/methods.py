"""The built-in answer of each method of the revision, one handler per method.

``HANDLERS`` maps a method to a function ``(services, ctx) -> Plan``; the
engine calls it once ``_meta`` and the version are checked and no
``methods:`` override answered. Handlers see the core only through
``Services``; they raise ``ClientError`` for client mistakes (unknown tool,
bad cursor, missing argument) and hand scripted rules to
``Services.answer``. Sans-I/O.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Callable

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario import matching
from mockmcp.wire import protocol as p
from mockmcp.core import tasks
from mockmcp.scenario import templates
from mockmcp.core.actions import Action, answered, Emit, Park, Plan, Send, Sleep
from mockmcp.core.context import Mode, RequestContext
from mockmcp.scenario.definitions import drop_none, prompt_definition, resource_definition, template_definition, tool_definition
from mockmcp.core.services import Services
from mockmcp.core.session import Subscription

if TYPE_CHECKING:
    from mockmcp.scenario.model.notify import Timer
    from mockmcp.scenario.model.tasks import TaskFaults

Handler = Callable[[Services, RequestContext], Plan]

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


def _paginate(svc: Services, ctx: RequestContext, items: list[dict[str, Any]], key: str, kind: str) -> Plan:
    cursor = ctx.params.get("cursor")
    start = 0
    if cursor is not None:
        start = _decode_cursor(cursor, kind, len(items), ctx.id)
    size = svc.protocol.pageSize or len(items) or 1
    page = items[start : start + size]
    result: dict[str, Any] = {key: page}
    if start + size < len(items):
        result["nextCursor"] = _encode_cursor(kind, start + size)
    return svc.final(ctx, result)


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


def _discover(svc: Services, ctx: RequestContext) -> Plan:
    result: dict[str, Any] = {"supportedVersions": list(svc.protocol.versions), "capabilities": svc.capabilities}
    if svc.scenario.server.instructions is not None:
        result["instructions"] = svc.scenario.server.instructions
    return svc.final(ctx, result)


def _tools_list(svc: Services, ctx: RequestContext) -> Plan:
    return _paginate(svc, ctx, svc.definitions(svc.scenario.tools, tool_definition), "tools", "tools")


def _prompts_list(svc: Services, ctx: RequestContext) -> Plan:
    return _paginate(svc, ctx, svc.definitions(svc.scenario.prompts, prompt_definition), "prompts", "prompts")


def _resources_list(svc: Services, ctx: RequestContext) -> Plan:
    return _paginate(svc, ctx, svc.definitions(svc.scenario.resources, resource_definition), "resources", "resources")


def _templates_list(svc: Services, ctx: RequestContext) -> Plan:
    defs = svc.definitions(svc.scenario.resourceTemplates, template_definition)
    return _paginate(svc, ctx, defs, "resourceTemplates", "templates")


def _require_str(ctx: RequestContext, key: str) -> str:
    value = ctx.params.get(key)
    if type(value) is not str:
        what = "missing" if value is None else "must be a string"
        raise errors.InvalidParams(f"Invalid params: {key!r} {what}", request_id=ctx.id)
    return value


def _tools_call(svc: Services, ctx: RequestContext) -> Plan:
    name = ctx.params.get("name")
    if type(name) is not str:
        name = _require_str(ctx, "name")  # (raises)
    tool = svc.tools.get(name)
    if tool is None or (tool.states is not None and not svc.visible(tool)):
        svc.note_unknown(ctx, "tool", name, [t.name for t in svc.scenario.tools if svc.visible(t)])
        raise errors.InvalidParams(f"Unknown tool: {name}", data={"name": name}, request_id=ctx.id)
    args = ctx.params.get("arguments")
    if args is not None and type(args) is not dict:
        raise errors.InvalidParams("Invalid params: 'arguments' must be an object", request_id=ctx.id)
    validate = svc.input_validator(tool)
    if validate is not None:
        problems = validate(args or {})
        if problems:
            # tools.mdx: input validation errors are tool execution errors, for the model to correct
            text = f"Invalid arguments for tool {name}: " + "; ".join(problems)
            svc.session.unmatched.append({"id": ctx.id, "method": ctx.method, "what": f"tool {name!r}", "invalidArguments": problems})
            return svc.final(ctx, {"content": [{"type": "text", "text": text}], "isError": True})
    svc.rounds.read(ctx)
    if not tool.replies:
        if svc.fail_unmatched:
            raise svc.selector.no_match([], ctx, f"tool {name!r}")
        return svc.final(ctx, {"content": []})
    return svc.answer(ctx, tool.replies, f"tool {name!r}")


def _prompts_get(svc: Services, ctx: RequestContext) -> Plan:
    name = _require_str(ctx, "name")
    prompt = svc.prompts.get(name)
    if prompt is None or not svc.visible(prompt):
        svc.note_unknown(ctx, "prompt", name, [x.name for x in svc.scenario.prompts if svc.visible(x)])
        raise errors.InvalidParams(f"Unknown prompt: {name}", data={"name": name}, request_id=ctx.id)
    args = ctx.params.get("arguments")
    if args is not None and (type(args) is not dict or any(type(v) is not str for v in args.values())):
        raise errors.InvalidParams("Invalid params: prompt 'arguments' must map names to strings", request_id=ctx.id)
    missing = [a.name for a in prompt.arguments or () if a.required and a.name not in (args or {})]
    if missing:
        raise errors.InvalidParams(
            f"Invalid params: missing required argument{'s' if len(missing) > 1 else ''} {', '.join(missing)} for prompt {name}",
            data={"missing": missing},
            request_id=ctx.id,
        )
    svc.rounds.read(ctx)
    if not prompt.replies:
        if svc.fail_unmatched:
            raise svc.selector.no_match([], ctx, f"prompt {name!r}")
        text = prompt.description or prompt.name
        return svc.final(ctx, {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
    return svc.answer(ctx, prompt.replies, f"prompt {name!r}")


def _resources_read(svc: Services, ctx: RequestContext) -> Plan:
    uri = _require_str(ctx, "uri")
    res = svc.resources.get(uri)
    if res is not None and svc.visible(res):
        svc.rounds.read(ctx)
        if res.replies:
            return svc.answer(ctx, res.replies, f"resource {uri!r}")
        if svc.fail_unmatched and res.text is None and res.blob is None and res.file is None:
            raise svc.selector.no_match([], ctx, f"resource {uri!r}")  # its content is no rule's to invent
        content = drop_none({"uri": uri, "mimeType": res.mimeType, "text": res.text, "blob": res.blob})
        if "text" not in content and "blob" not in content:
            content["text"] = ""
        return svc.final(ctx, {"contents": [content]}, (res.ttlMs, res.cacheScope))
    for pattern, tmpl in svc.templates:
        if not svc.visible(tmpl):
            continue
        found = pattern.match(uri)
        if found is not None:  # (an empty dict too: a template without variables)
            ctx.set_vars(found)
            svc.rounds.read(ctx)
            if not tmpl.replies:
                if svc.fail_unmatched:
                    raise svc.selector.no_match([], ctx, f"resource template {tmpl.uriTemplate!r}")
                break
            return svc.answer(ctx, tmpl.replies, f"resource template {tmpl.uriTemplate!r}")
    known = [r.uri for r in svc.scenario.resources if svc.visible(r)]
    svc.note_unknown(ctx, "resource", uri, known + [t.uriTemplate for t in svc.scenario.resourceTemplates])
    raise errors.InvalidParams(f"Resource not found: {uri}", data={"uri": uri}, request_id=ctx.id)


def _complete_handler(svc: Services, ctx: RequestContext) -> Plan:
    if svc.fail_unmatched and not svc.scenario.completions:
        # nothing to complete from but methods rules, and none answered (a cassette's replay)
        raise svc.selector.no_match(svc.overrides.get(p.COMPLETE, []), ctx, f"method {p.COMPLETE!r}")
    ref = ctx.params.get("ref")
    argument = ctx.params.get("argument")
    if type(ref) is not dict or type(argument) is not dict or type(argument.get("name")) is not str:
        raise errors.InvalidParams("Invalid params: completion/complete needs 'ref' and 'argument.name'", request_id=ctx.id)
    value = argument.get("value", "")
    if type(value) is not str:
        raise errors.InvalidParams("Invalid params: 'argument.value' must be a string", request_id=ctx.id)
    kind = ref.get("type")
    completions = svc.scenario.completions
    if kind == "ref/prompt":
        target = ref.get("name")
        if type(target) is not str or target not in svc.prompts:
            raise errors.InvalidParams(f"Unknown prompt: {target}", request_id=ctx.id)
        found = [c for c in completions if c.prompt == target and c.argument == argument["name"]]
    elif kind == "ref/resource":
        target = ref.get("uri")
        known = type(target) is str and (
            any(t.uriTemplate == target for t in svc.scenario.resourceTemplates) or target in svc.resources
        )
        if not known:
            raise errors.InvalidParams(f"Unknown resource template: {target}", request_id=ctx.id)
        found = [c for c in completions if c.resourceTemplate == target and c.argument == argument["name"]]
    else:
        raise errors.InvalidParams("Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'", request_id=ctx.id)
    if any(c.context is not None for c in found):
        given = ctx.params.get("context")
        given = given if type(given) is dict else {}
        found = [c for c in found if c.context is None or matching.value_matches(c.context, given)]
    if not found and svc.fail_unmatched:
        # no completions entry and no methods rule answered: the near miss is the closest rule
        raise svc.selector.no_match(svc.overrides.get(p.COMPLETE, []), ctx, f"method {p.COMPLETE!r}")
    values = [v for c in found for v in c.values if v.lower().startswith(value.lower())]
    return svc.final(ctx, {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}})


def _listen(svc: Services, ctx: RequestContext) -> Plan:
    wanted = ctx.params.get("notifications")
    if type(wanted) is not dict:
        raise errors.InvalidParams("Invalid params: subscriptions/listen needs a 'notifications' object", request_id=ctx.id)
    caps = svc.capabilities
    honored: dict[str, Any] = {}
    for field, cap in (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"), ("resourcesListChanged", "resources")):
        if wanted.get(field) is True and (caps.get(cap) or {}).get("listChanged"):
            honored[field] = True
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if type(uris) is not list or any(type(u) is not str for u in uris):
            raise errors.InvalidParams("Invalid params: resourceSubscriptions must be a list of URIs", request_id=ctx.id)
        if (caps.get("resources") or {}).get("subscribe"):
            honored["resourceSubscriptions"] = list(uris)
    task_ids = wanted.get("taskIds")
    if task_ids is not None:
        if type(task_ids) is not list or any(type(t) is not str for t in task_ids):
            raise errors.InvalidParams("Invalid params: taskIds must be a list of task ids", request_id=ctx.id)
        if not tasks.has_extension(ctx.meta):
            raise tasks.missing_extension(ctx.id, "listening for task notifications (taskIds)")
        table = svc.tasks
        if table is not None and _offers_tasks(svc):
            honored["taskIds"] = [t for t in task_ids if table.peek(t) is not None]  # (not unknown or corrupt ones)
    level = ctx.meta.get(p.META_LOG_LEVEL)
    svc.session.subscribe(Subscription(ctx.id, honored, level if type(level) is str else None))
    ack = svc.envelope.notification(
        p.SUBSCRIPTIONS_ACKNOWLEDGED, {"_meta": {p.META_SUBSCRIPTION_ID: ctx.id}, "notifications": honored}
    )
    plan = svc.expand(ctx, svc.scenario.subscriptions.timeline, None, Mode.SUBSCRIPTION)
    actions = plan.actions
    if plan.rest is not None:
        # A stream's timeline is short and scenario-bounded; timers need it whole to interleave.
        actions = actions + [a for a in plan.rest if a is not None]
        plan.rest = None
    timers = svc.scenario.subscriptions.timers
    if timers:
        actions = _with_timers(actions, _timer_events(svc, ctx, timers))
    watched = honored.get("taskIds")
    if watched and actions and type(actions[-1]) is Park:
        # The stream stays open for task changes: instead of parking, it waits on them.
        session = svc.session
        svc.tasks.watch(ctx.id, watched)
        actions = actions[:-1]
        plan.rest = svc.tasks.stream(ctx.id, watched, lambda sid: sid in session.subscriptions)
    plan.actions = [ack, *actions]
    plan.immediate = False
    return plan


# ---------------------------------------------------------------- the Tasks extension


def _offers_tasks(svc: Services) -> bool:
    ext = svc.capabilities.get("extensions")
    return type(ext) is dict and p.TASKS_EXTENSION in ext


def _task_table(svc: Services, ctx: RequestContext) -> tasks.TaskTable:
    """The table, once the server offers the extension and the client declared it."""
    if not _offers_tasks(svc):
        raise errors.MethodNotFound(f"Method not found: {ctx.method} (this server does not offer the {p.TASKS_EXTENSION} extension)", request_id=ctx.id)
    if not tasks.has_extension(ctx.meta):
        raise tasks.missing_extension(ctx.id, ctx.method)
    table: tasks.TaskTable | None = svc.tasks
    if table is None:  # the extension is declared by hand, but no reply makes tasks
        raise errors.InvalidParams("Failed to retrieve task: Task not found", data={"taskId": ctx.params.get("taskId")}, request_id=ctx.id)
    return table


def _with_notifications(svc: Services, plan: Plan, rec: tasks.TaskRecord) -> Plan:
    """The answer, then ``notifications/tasks`` to the streams watching a task that changed."""
    session = svc.session
    plan.actions.extend(svc.tasks.notifications(rec, lambda sid: sid in session.subscriptions))
    return plan


def _tasks_get(svc: Services, ctx: RequestContext) -> Plan:
    table = _task_table(svc, ctx)
    rec = table.find(ctx.params.get("taskId"), ctx.id)
    faults = table.spec_of(rec).faults
    if faults is None:
        table.count_poll(rec)
        plan = _task_response(svc, ctx, table.get_result_text(rec))
    else:
        if faults.hangGetAfterPolls is not None and rec.total_polls >= faults.hangGetAfterPolls:
            return Plan(ctx.id, [Park()], ctx.method, "task fault: hangGetAfterPolls")
        if faults.vanishAfterPolls is not None and rec.total_polls >= faults.vanishAfterPolls:
            raise errors.InvalidParams("Failed to retrieve task: Task not found", data={"taskId": rec.id}, request_id=ctx.id)
        table.count_poll(rec)
        plan = svc.final(ctx, _faulty_status(table, rec, table.detailed(rec), faults))
    table.after_poll(rec)
    return _with_notifications(svc, plan, rec)


def _task_response(svc: Services, ctx: RequestContext, result_text: str) -> Plan:
    """The response around a result already encoded (the request id is the one hole)."""
    try:
        rid = ctx.id
        rid_text = int.__repr__(rid) if type(rid) is int else jsonrpc.encode_text(rid)
        data = ('{"jsonrpc":"2.0","id":' + rid_text + ',"result":' + result_text + "}\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate the client sent: the general path escapes it
        return svc.final(ctx, json.loads(result_text))
    return answered(ctx.id, Send(None, data, True), ctx.method, None)


def _faulty_status(table: tasks.TaskTable, rec: tasks.TaskRecord, body: dict[str, Any], faults: TaskFaults) -> dict[str, Any]:
    """What a faulty server reports instead of the task's true state (once it has ended)."""
    if rec.status not in tasks.TERMINAL:
        return body
    plain = {k: v for k, v in body.items() if k not in ("result", "error", "inputRequests")}
    if faults.statusBackwards and rec.fault_step == 0:
        rec.fault_step = 1
        return {**plain, "status": "working"}
    if faults.terminalChanges:
        rec.fault_step += 1
        if rec.fault_step > 1:  # the first look is true; every later one says otherwise
            if rec.status == "completed":
                return {**plain, "status": "failed", "error": {"code": p.INTERNAL_ERROR, "message": "mockmcp fault: a completed task failed later"}}
            return {**plain, "status": "completed", "result": {"content": [{"type": "text", "text": "mockmcp fault: an ended task completed later"}]}}
    return body


def _tasks_update(svc: Services, ctx: RequestContext) -> Plan:
    table = _task_table(svc, ctx)
    rec = table.update(ctx.params.get("taskId"), ctx.params.get("inputResponses"), ctx.id)
    return _with_notifications(svc, svc.final(ctx, {}), rec)


def _tasks_cancel(svc: Services, ctx: RequestContext) -> Plan:
    table = _task_table(svc, ctx)
    rec = table.cancel(ctx.params.get("taskId"), ctx.id)
    return _with_notifications(svc, svc.final(ctx, {}), rec)


def _timer_events(svc: Services, ctx: RequestContext, timers: list[Timer]) -> list[tuple[float, Emit]]:
    """Every timed event of one stream as (seconds after the ack, event), in time order."""
    events = []
    scale = svc.steps.time_scale
    for timer in timers:
        uri = templates.render_text(timer.emit.uri, ctx.scope())
        every = timer.every.seconds if timer.every is not None else 0.0
        for n in range(timer.count):
            events.append(((timer.after.seconds + n * every) * scale, Emit(timer.emit.event, uri, ctx.id, has_only=True)))
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


HANDLERS: dict[str, Handler] = {
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
    p.TASKS_GET: _tasks_get,
    p.TASKS_UPDATE: _tasks_update,
    p.TASKS_CANCEL: _tasks_cancel,
}
