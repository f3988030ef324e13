"""Semantic checks of a structured scenario (what types alone cannot say).

Runs after the loader has structured the file; reports problems by JSON path so
the loader can add file, line and column. Deliberate violations are written
with ``raw``/``rawBytes`` steps or ``methods`` overrides and are never
flagged: only what the scenario *means* to be valid is checked.

The rule this module keeps: a scenario it accepts never crashes ``mockmcp run``.
So beyond meaning, it bounds what one reply may cost (``MAX_REPLY_STEPS``,
``MAX_HUGE_BYTES``) and refuses what the engine could not build (URI templates
it cannot compile, exit statuses a process cannot have). Sans-I/O: the loader
reads resource files and hands their bytes in.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Iterator

import attrs

from mockmcp.scenario import matching
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.scenario.definitions import iter_rules, validates_input
from mockmcp.scenario.resultshapes import result_problems
from mockmcp.scenario.uritemplates import compile_uri_template
from mockmcp.scenario.model.faults import (
    DribbleStep, EndSubscriptionStep, ExitStep, HttpSpec, HttpStep, HugeStep, RawBytesStep, RequestStep, SetStateStep, StopReadingStep,
)
from mockmcp.scenario.model.notify import EmitStep, LoopStep, ProgressStep
from mockmcp.scenario.model.rounds import InputRequiredStep
from mockmcp.scenario.model.catalog import TERMINAL_STEPS, Step
from mockmcp.scenario.model.tasks import TaskFaults, TaskSpec, TaskStep

# The most steps one reply may run once its loops are unrolled, counting loops with
# a literal ``times`` (a template-given count is capped when the reply runs).
MAX_REPLY_STEPS = 100_000
# The largest ``huge`` result text: the engine builds it in memory, and encodes it once more.
MAX_HUGE_BYTES = 64 * 1024 * 1024

Path_ = tuple[Any, ...]


@attrs.frozen
class Found:
    path: Path_
    message: str
    level: str = "error"


def iter_step_lists(s: model.Scenario) -> Iterator[tuple[Path_, str, list[Step]]]:
    for path, method, rule in iter_rules(s):
        if rule.steps is not None:
            yield path + ("steps",), method, rule.steps
        for k, seq in enumerate(rule.sequence or ()):
            yield path + ("sequence", k), method, seq
    yield ("subscriptions", "timeline"), p.SUBSCRIPTIONS_LISTEN, s.subscriptions.timeline


def iter_steps(s: model.Scenario) -> Iterator[tuple[Path_, Step]]:
    """Every step, including those inside ``loop`` steps."""
    for path, _, steps in iter_step_lists(s):
        yield from _walk(path, steps)


def _walk(path: Path_, steps: list[Step]) -> Iterator[tuple[Path_, Step]]:
    for i, step in enumerate(steps):
        yield path + (i,), step
        if isinstance(step, LoopStep):
            yield from _walk(path + (i, "loop", "steps"), step.loop.steps)


_INPUT_PARAMS_REQUIRED = {p.ELICIT: ("message",), p.SAMPLE: ("messages", "maxTokens"), p.LIST_ROOTS: ()}


def _input_request_problems(key: str, req: Any) -> str | None:
    if type(req) is not dict:
        return f"input request {key!r} must be a mapping with 'method' and 'params'"
    method = req.get("method")
    if method not in p.INPUT_REQUEST_METHODS:
        return f"input request {key!r}: method must be one of {', '.join(sorted(p.INPUT_REQUEST_METHODS))}, got {method!r}"
    params = req.get("params", {})
    if type(params) is not dict:
        return f"input request {key!r}: params must be a mapping"
    for k in _INPUT_PARAMS_REQUIRED[method]:
        if k not in params:
            return f"input request {key!r}: {method} params need {k!r}"
    if method == p.ELICIT:
        mode = params.get("mode", "form")
        if mode == "url" and "url" not in params:
            return f"input request {key!r}: url-mode elicitation needs 'url'"
        if mode == "form" and type(params.get("requestedSchema")) is not dict:
            return f"input request {key!r}: form-mode elicitation needs a 'requestedSchema'"
    return None


# Fields sent exactly as written. A ``{{ }}`` in one is never rendered: it reaches the client
# as braces, so it is a mistake (most often meant for a field that renders) that check names.
_LITERAL_FIELDS: dict[type, tuple[tuple[str, ...], ...]] = {
    SetStateStep: (("setState",),),
    HttpStep: (("http", "body"), ("http", "contentType"), ("http", "write"), ("http", "headers")),
    HugeStep: (("huge", "char"),),
    RequestStep: (("request", "name"),),
}
_RENDERED = "templates work in text, result and error steps, progress messages, logs, emitted uris, raw steps and input requests"


def _unrendered(path: Path_, field: str, value: Any) -> Found | None:
    if not templates.has_template(value):
        return None
    return Found(path, f"{field} is sent as written: its '{{{{ }}}}' is never rendered ({_RENDERED})")


def _check_steps(path: Path_, method: str, steps: list[Step], found: list[Found], *, timeline: bool) -> None:
    last_progress: float | None = None
    for i, step in enumerate(steps):
        sp = path + (i,)
        for value in _field_values(step):
            for msg in templates.check(_plain(value)):
                found.append(Found(sp, f"template error: {msg}"))
        for field in _LITERAL_FIELDS.get(type(step), ()):
            value = step
            for name in field:
                value = getattr(value, name)
            if (literal := _unrendered(sp + field, ".".join(field), value)) is not None:
                found.append(literal)
        if isinstance(step, model.TextStep):
            pass  # the commonest step: nothing to check beyond its template (skips the chain below)
        elif isinstance(step, model.ResultStep):
            if not templates.has_template(step.result):
                for sub, msg in result_problems(method, step.result):
                    found.append(Found(sp + ("result",) + sub, msg))
        elif isinstance(step, InputRequiredStep):
            if method not in p.INPUT_REQUIRED_METHODS:
                found.append(Found(sp, f"input_required is not allowed on {method} (only tools/call, prompts/get, resources/read); write it as a raw step to send it deliberately"))
            spec = step.inputRequired
            if not spec.inputRequests and spec.requestState is False:
                found.append(Found(sp + ("inputRequired",), "an input_required result needs inputRequests or requestState"))
            for key, req in spec.inputRequests.items():
                problem = _input_request_problems(key, req)
                if problem:
                    found.append(Found(sp + ("inputRequired", "inputRequests", key), problem))
        elif isinstance(step, ProgressStep):
            value = step.progress.progress
            if isinstance(value, str):
                last_progress = None  # a template's values are known only when it runs
            else:
                if last_progress is not None and value <= last_progress and not step.progress.deliberate:
                    found.append(Found(sp, f"progress must increase ({value} after {last_progress}); mark it deliberate: true if meant", "warning"))
                last_progress = value
        elif isinstance(step, LoopStep):
            inner = step.loop.steps
            for j, inner_step in enumerate(inner):
                if isinstance(inner_step, (*TERMINAL_STEPS, EndSubscriptionStep)):
                    found.append(Found(sp + ("loop", "steps", j), "a loop holds only non-final steps (progress, log, sleep, emit, ...)"))
            _check_steps(sp + ("loop", "steps"), method, [x for x in inner if not isinstance(x, (TERMINAL_STEPS, EndSubscriptionStep))], found, timeline=True)
            if type(step.loop.times) is int and step.loop.times < 0:
                found.append(Found(sp + ("loop", "times"), "times must be at least 0"))
        elif isinstance(step, EmitStep):
            if step.emit.event == "resources/updated" and step.emit.uri is None:
                found.append(Found(sp + ("emit",), "resources/updated needs a 'uri'"))
        elif isinstance(step, EndSubscriptionStep) and not timeline:
            found.append(Found(sp, "endSubscription is only for the subscriptions timeline"))
        elif isinstance(step, HugeStep):
            if step.huge.bytes < 0 or not step.huge.char:
                found.append(Found(sp + ("huge",), "huge needs bytes >= 0 and a non-empty char"))
            elif step.huge.bytes > MAX_HUGE_BYTES:
                found.append(Found(sp + ("huge", "bytes"), f"huge is at most {MAX_HUGE_BYTES} bytes (64 MiB), got {step.huge.bytes}"))
        elif isinstance(step, ExitStep):
            _exit_status(sp + ("exit", "status"), step.exit.status, found)
        elif isinstance(step, TaskStep):
            _check_task(sp + ("task",), method, step.task, found, timeline=timeline)
        elif isinstance(step, HttpStep):
            found.extend(Found(sp + ("http",) + where, text) for where, text in http_step_problems(step.http))
        elif isinstance(step, RequestStep):
            if step.request.timeout.template is not None:
                found.append(Found(sp + ("request", "timeout"), "only a sleep's duration may be a template"))
            if step.request.expect is not None:
                found.extend(Found(sp + ("request", "expect") + where, msg)
                             for where, msg in matching.pattern_problems(step.request.expect))
            if timeline or method.startswith("notifications/"):
                found.append(Found(sp, "a request to the client belongs in a reply to a request (it waits for the answer)"))
            elif step.request.method in _INPUT_PARAMS_REQUIRED and not templates.has_template(step.request.params):
                problem = _input_request_problems("request", {"method": step.request.method, "params": step.request.params})
                if problem:
                    found.append(Found(sp + ("request",), problem.replace("input request 'request': ", "")))
        elif isinstance(step, DribbleStep) and step.dribble.pause.template is not None:
            found.append(Found(sp + ("dribble", "pause"), "only a sleep's duration may be a template"))
        elif isinstance(step, StopReadingStep) and isinstance(step.stopReading, model.Duration) and step.stopReading.template is not None:
            found.append(Found(sp + ("stopReading",), "only a sleep's duration may be a template"))
        elif isinstance(step, RawBytesStep):
            try:
                step.rawBytes.encode("latin-1")
            except UnicodeEncodeError:
                found.append(Found(sp + ("rawBytes",), "rawBytes holds one byte per character (U+0000..U+00FF); use \\xNN escapes"))
        if isinstance(step, TERMINAL_STEPS) and i < len(steps) - 1:
            found.append(Found(path + (i + 1,), "steps after a final step (result, text, error, inputRequired, hang, exit) never run", "warning"))
            break
    if not timeline and not (steps and isinstance(steps[-1], TERMINAL_STEPS)) and not any(isinstance(s, TERMINAL_STEPS) for s in steps):
        found.append(Found(path, "a reply must end with result, text, error, inputRequired, hang or exit"))


_TASK_OUTCOMES = (model.TextStep, model.ResultStep, model.ErrorStep, HugeStep)


def _check_task(path: Path_, method: str, spec: TaskSpec, found: list[Found], *, timeline: bool) -> None:
    """A ``task:`` step: where it may answer, phases that can end, keys unique over the task's life."""
    faults = spec.faults or TaskFaults()
    if timeline:
        found.append(Found(path, "a task answers a request; it cannot be part of a subscription timeline or a loop"))
        return
    if method not in p.TASK_AUGMENTABLE and not faults.anyMethod:
        found.append(Found(path, f"a task can only answer {', '.join(sorted(p.TASK_AUGMENTABLE))} (not {method}); set faults.anyMethod: true to send one deliberately"))
    if spec.ttlMs is not None and spec.ttlMs < 0:
        found.append(Found(path + ("ttlMs",), "ttlMs must be at least 0 (or null: unlimited)"))
    if spec.pollIntervalMs < 0:
        found.append(Found(path + ("pollIntervalMs",), "pollIntervalMs must be at least 0"))
    if (literal := _unrendered(path + ("statusMessage",), "statusMessage", spec.statusMessage)) is not None:
        found.append(literal)
    seen: dict[str, int] = {}
    for i, phase in enumerate(spec.phases):
        pp = path + ("phases", i)
        if (literal := _unrendered(pp + ("statusMessage",), "statusMessage", phase.statusMessage)) is not None:
            found.append(literal)
        ends = [k for k in ("after", "polls", "state") if getattr(phase, k) is not None]
        if phase.status == "input_required":
            if not phase.inputRequests:
                found.append(Found(pp, "an input_required phase needs inputRequests (it ends when all are answered)"))
            if ends:
                found.append(Found(pp + (ends[0],), "an input_required phase ends when its inputs are answered; it takes no after/polls/state"))
        else:
            if phase.inputRequests:
                found.append(Found(pp + ("inputRequests",), "inputRequests belong to an input_required phase"))
            if len(ends) > 1:
                found.append(Found(pp, f"a phase ends one way: give one of after, polls, state (not {', '.join(ends)})"))
            if not ends and i < len(spec.phases) - 1:
                found.append(Found(pp, "this phase never ends by itself (no after, polls or state): the phases after it run only if nothing cancels first", "warning"))
        if phase.polls is not None and phase.polls < 1:
            found.append(Found(pp + ("polls",), "polls must be at least 1"))
        if phase.pollIntervalMs is not None and phase.pollIntervalMs < 0:
            found.append(Found(pp + ("pollIntervalMs",), "pollIntervalMs must be at least 0"))
        for key, req in (phase.inputRequests or {}).items():
            problem = _input_request_problems(key, req)
            if problem:
                found.append(Found(pp + ("inputRequests", key), problem))
            if key in seen and not faults.reuseInputKey:
                found.append(Found(pp + ("inputRequests", key), f"input request key {key!r} is already used by phase {seen[key]}: keys are unique over a task's life (faults.reuseInputKey reuses them deliberately)"))
            seen.setdefault(key, i)
    if len(spec.outcome) > 1 or (spec.outcome and not isinstance(spec.outcome[0], _TASK_OUTCOMES)):
        found.append(Found(path + ("outcome",), "a task's outcome is one text, result or huge step (completed) or one error step (failed)"))
    elif spec.outcome:
        _check_steps(path + ("outcome",), method, spec.outcome, found, timeline=False)
    for name in ("vanishAfterPolls", "hangGetAfterPolls"):
        value = getattr(faults, name)
        if value is not None and value < 0:
            found.append(Found(path + ("faults", name), f"{name} must be at least 0"))


_HTTP_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HTTP_VALUE = re.compile(r"[\x20-\x7e\t\x80-\xff]*")
_SHELL_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})


def http_step_problems(spec: HttpSpec) -> list[tuple[Path_, str]]:
    """What the HTTP shell could not send as written (h11 refuses such a head or body)."""
    out: list[tuple[Path_, str]] = []
    if spec.status is not None and not (200 <= spec.status <= 599) or spec.status in (204, 304):
        out.append((("status",), "status must be 200..599 (not 204 or 304, which carry no body)"))
    for name, value in spec.headers.items():
        if not _HTTP_TOKEN.fullmatch(name):
            out.append((("headers", name), "a header name is a token (letters, digits and !#$%&'*+-.^_`|~)"))
        elif name.lower() in _SHELL_HEADERS:
            out.append((("headers", name), "content-length, transfer-encoding and connection are the shell's (they frame the body)"))
        if not _HTTP_VALUE.fullmatch(value) or value != value.strip():
            out.append((("headers", name), "a header value has no control characters and no leading or trailing spaces"))
    for key, span in (("delay", spec.delay), ("retry", spec.retry)):
        if span is not None and span.template is not None:
            out.append(((key,), "only a sleep's duration may be a template"))
    if spec.retry is not None and spec.respondAs == "json":
        out.append((("retry",), "retry closes an SSE stream for the client to resume: it needs respondAs sse (or none)"))
    if spec.contentType is not None and not _HTTP_VALUE.fullmatch(spec.contentType):
        out.append((("contentType",), "a content type has no control characters"))
    if spec.write is not None:
        try:
            spec.write.encode("latin-1")
        except UnicodeEncodeError:
            out.append((("write",), "write holds one byte per character (U+0000..U+00FF); use \\xNN escapes"))
    return out


def _when_problems(w: model.Match) -> list[tuple[Path_, str]]:
    """A `when` block's problems, by path from the rule."""
    out: list[tuple[Path_, str]] = []
    for name in ("nth", "every", "first"):
        v = getattr(w, name)
        if v is not None and v < 1:
            out.append((("when", name), f"{name} must be at least 1"))
    if w.probability is not None and not 0 <= w.probability <= 1:
        out.append((("when", "probability"), "probability must be between 0 and 1"))
    for key, pattern in (("arguments", w.arguments), ("inputResponses", w.inputResponses), ("vars", w.vars), ("params", w.params), ("_meta", w.meta)):
        out.extend(matching.pattern_problems(pattern, ("when", key)))
    return out


def _exit_status(path: Path_, status: int, found: list[Found]) -> None:
    if not 0 <= status <= 255:
        found.append(Found(path, f"an exit status is 0 to 255, got {status}"))


def reply_steps(steps: list[Step]) -> int:
    """How many steps a reply runs at most with its literal loops unrolled (stops
    counting past ``MAX_REPLY_STEPS``: the caller only compares)."""
    total = 0
    for step in steps:
        if isinstance(step, LoopStep):
            times = step.loop.times if type(step.loop.times) is int else 1
            total += max(0, times) * reply_steps(step.loop.steps)
        else:
            total += 1
        if total > MAX_REPLY_STEPS:
            return total
    return total


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # then the file is sent as a blob


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_values(obj: Any) -> list[Any]:
    """An attrs instance's field values (``attrs.asdict(recurse=False)`` without the dict)."""
    cls = type(obj)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in attrs.fields(cls))
    return [getattr(obj, name) for name in names]


_IS_ATTRS: dict[type, bool] = {}


def _plain(value: Any) -> Any:
    """An attrs instance as nested dicts (for the template scan); other values as they are."""
    cls = type(value)
    is_attrs = _IS_ATTRS.get(cls)
    if is_attrs is None:
        is_attrs = _IS_ATTRS[cls] = attrs.has(cls)  # attrs.has costs a call per value: once per class
    if is_attrs:
        return {k: _plain(v) for k, v in attrs.asdict(value, recurse=False).items()}
    return value


def check(s: model.Scenario, *, files: Mapping[str, bytes] | None = None) -> tuple[model.Scenario, list[Found]]:
    """The scenario (resource ``file:`` contents filled in from ``files``, which the
    loader read) and every problem found. A ``file:`` missing from ``files`` is
    left as it is: the loader has reported why it could not be read."""
    found: list[Found] = []
    for kind, items, key in (
        ("tools", s.tools, "name"),
        ("prompts", s.prompts, "name"),
        ("resources", s.resources, "uri"),
        ("resourceTemplates", s.resourceTemplates, "uriTemplate"),
    ):
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            v = getattr(item, key)
            if v in seen:
                found.append(Found((kind, i, key), f"duplicate {key} {v!r} (also at {kind}[{seen[v]}])"))
            seen.setdefault(v, i)
    for i, t in enumerate(s.tools):
        if t.inputSchema.get("type") != "object":
            found.append(Found(("tools", i, "inputSchema"), "a tool's inputSchema must have type: object"))
        elif validates_input(t, s.protocol.validateInput):
            from mockmcp.scenario.jsonschema.validator import SchemaError, validator_for  # only for schemas that need it

            try:
                validator_for(t.inputSchema)
            except SchemaError as exc:  # the documented way a schema is refused
                found.append(Found(("tools", i, "inputSchema", *exc.path), f"{exc} (arguments are validated against it; set validateInput: false on the tool to serve it unvalidated)"))
    for i, tm in enumerate(s.resourceTemplates):
        try:
            compile_uri_template(tm.uriTemplate)
        except ValueError as exc:  # the documented way it refuses a template
            found.append(Found(("resourceTemplates", i, "uriTemplate"), str(exc)))
    for path, method, steps in iter_step_lists(s):
        # Rules for notifications (methods: notifications/...) need not answer: there is no id.
        _check_steps(path, method, steps, found, timeline=path[0] == "subscriptions" or method.startswith("notifications/"))
        if reply_steps(steps) > MAX_REPLY_STEPS:
            found.append(Found(path, f"this reply runs more than {MAX_REPLY_STEPS} steps with its loops unrolled (loop times multiply)"))
    # The loader shares equal `when` blocks, so each distinct one is checked once
    # (by identity, while this call holds them: 100,000 rules often have 100 blocks).
    when_checked: dict[int, tuple[model.Match, list[tuple[Path_, str]]]] = {}
    for path, _, rule in iter_rules(s):
        if (rule.steps is None) == (rule.sequence is None):
            found.append(Found(path, "a rule needs either 'steps' or 'sequence'"))
        if rule.sequence is not None and not rule.sequence:
            found.append(Found(path + ("sequence",), "a sequence needs at least one reply"))
        w = rule.when
        checked = when_checked.get(id(w))
        if checked is None:
            checked = when_checked[id(w)] = (w, _when_problems(w))
        for sub, msg in checked[1]:
            found.append(Found(path + sub, msg))
    for i, timer in enumerate(s.subscriptions.timers):
        tp = ("subscriptions", "timers", i)
        if timer.emit.event == "resources/updated" and timer.emit.uri is None:
            found.append(Found(tp + ("emit",), "resources/updated needs a 'uri'"))
        for key in ("after", "every"):
            d = getattr(timer, key)
            if d is not None and d.template is not None:
                found.append(Found(tp + (key,), "only a sleep's duration may be a template (timers are set when the stream opens)"))
        if timer.count < 1:
            found.append(Found(tp + ("count",), "count must be at least 1"))
        if timer.count > 1 and (timer.every is None or timer.every.seconds <= 0):
            found.append(Found(tp, "a timer with count above 1 needs a positive 'every'"))
        for msg in templates.check(timer.emit.uri):
            found.append(Found(tp + ("emit", "uri"), f"template error: {msg}"))
    if s.expectations:
        from mockmcp.scenario.expectations import problems as expectation_problems

        found.extend(Found(path, message) for path, message in expectation_problems(s.expectations))
    if s.auth is not None:
        from mockmcp.scenario.authcheck import problems as auth_problems

        found.extend(Found(path, message, level) for path, message, level in auth_problems(s.auth))
    if s.protocol.era == "modern":
        for sp, step in iter_steps(s):
            if isinstance(step, RequestStep):
                found.append(Found(sp, "requests to the client exist only in the legacy era (protocol.era: legacy or dual); this revision uses inputRequired"))
    if not s.protocol.versions:
        found.append(Found(("protocol", "versions"), "at least one protocol version is needed"))
    if s.protocol.exitAfter is not None:
        if s.protocol.exitAfter.messages < 1:
            found.append(Found(("protocol", "exitAfter", "messages"), "messages must be at least 1"))
        _exit_status(("protocol", "exitAfter", "status"), s.protocol.exitAfter.status, found)
    if s.protocol.pageSize is not None and s.protocol.pageSize < 1:
        found.append(Found(("protocol", "pageSize"), "pageSize must be at least 1"))
    states = s.state.states
    if states is not None:
        for sp, step in iter_steps(s):
            if isinstance(step, SetStateStep) and step.setState not in states:
                found.append(Found(sp + ("setState",), f"unknown state {step.setState!r} (declared: {', '.join(states)})"))
    for i, c in enumerate(s.completions):
        if (c.prompt is None) == (c.resourceTemplate is None):
            found.append(Found(("completions", i), "a completion names exactly one of 'prompt' or 'resourceTemplate'"))
        for sub, msg in matching.pattern_problems(c.context, ("context",)):
            found.append(Found(("completions", i) + sub, msg))
    resources = list(s.resources)
    for i, r in enumerate(s.resources):
        given = [k for k in ("text", "blob", "file") if getattr(r, k) is not None]
        if len(given) > 1:
            found.append(Found(("resources", i), f"give only one of text, blob or file (got {', '.join(given)})"))
        if r.blob is not None:
            try:
                base64.b64decode(r.blob, validate=True)
            except ValueError:
                found.append(Found(("resources", i, "blob"), "blob must be base64"))
        if r.file is not None and files is not None and r.file in files:
            data = files[r.file]
            text_like = (r.mimeType or "text/plain").startswith("text/") or (r.mimeType or "").endswith(("json", "xml", "yaml"))
            text = _utf8(data) if text_like else None
            if text is not None:
                resources[i] = attrs.evolve(r, text=text)
            else:
                resources[i] = attrs.evolve(r, blob=base64.b64encode(data).decode())
    if resources != list(s.resources):
        s = attrs.evolve(s, resources=resources)
    return s, found
