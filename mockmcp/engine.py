"""The engine: one inbound message in, one plan of actions out.

Plain synchronous code (no trio, yaml or cattrs), so it is tested over a fake
link without processes. It owns the rules every request goes through
(``_meta`` checks, version negotiation, id reuse, ``methods:`` overrides,
capability gating), rule selection and targeting, the expansion of scripted
steps into actions, and input_required rounds; the built-in answer of each
method lives in ``methods``, the wire shape of each primitive in
``definitions``. The per-process
state it keeps is only what the mock itself needs: the ids in flight, the
open subscriptions, rule counters and the scenario's named state.
"""

from __future__ import annotations

import random
from typing import Any, Iterable

from . import errors, jsonrpc, model, mrtr, protocol as p, templates
from .actions import Action, Cancel, CloseStdout, Dribble, Emit, Exit, Output, Park, Plan, Send, Sleep, Stderr, StopReading, WriteRaw
from .definitions import compile_uri_template, derive_capabilities, drop_none, icons
from .matching import matches, near_miss
from .replies import CompiledReply, compile_reply
from .methods import CAPABILITY_FOR, HANDLERS, Subscription

_DEFAULT_MESSAGES = {
    p.PARSE_ERROR: "Parse error",
    p.INVALID_REQUEST: "Invalid Request",
    p.METHOD_NOT_FOUND: "Method not found",
    p.INVALID_PARAMS: "Invalid params",
    p.INTERNAL_ERROR: "Internal error",
    p.MISSING_REQUIRED_CLIENT_CAPABILITY: "Missing required client capability",
    p.UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
}



class Engine:
    """Turns inbound JSON-RPC messages into plans, following one scenario."""

    def __init__(
        self,
        scenario: model.Scenario,
        *,
        seed: int | None = None,
        time_scale: float = 1.0,
        state_key: bytes | None = None,
    ) -> None:
        self.scenario = scenario
        self.protocol = scenario.protocol
        self.time_scale = time_scale
        self.rng = random.Random(seed)
        key = state_key or (scenario.protocol.stateKey.encode() if scenario.protocol.stateKey else None)
        self.state_codec = mrtr.StateCodec(key)
        self.state = scenario.state.initial
        self.in_flight: dict[Any, str] = {}  # request id -> method
        self.subscriptions: dict[Any, Subscription] = {}
        self.requests_seen = 0
        self._counters: dict[int, int] = {}
        self._loop_free: set[int] = set()  # ids of step lists without a loop step (no unrolling needed)
        # id(step list) -> (method, compiled reply or None); None when compiling is turned off
        self._replies: dict[int, tuple[str, CompiledReply | None]] | None = {}
        self._sequence_use: dict[int, int] = {}
        self.capabilities = (
            scenario.capabilities if scenario.capabilities is not None else derive_capabilities(scenario)
        )
        info = drop_none(
            {
                "name": scenario.server.name,
                "version": scenario.server.version,
                "title": scenario.server.title,
                "description": scenario.server.description,
                "websiteUrl": scenario.server.websiteUrl,
                "icons": icons(scenario.server.icons),
            }
        )
        self.server_info = info
        self._server_meta = {p.META_SERVER_INFO: info}
        self._tools = {t.name: t for t in scenario.tools}
        self._prompts = {pr.name: pr for pr in scenario.prompts}
        self._resources = {r.uri: r for r in scenario.resources}
        self._templates = [(compile_uri_template(t.uriTemplate), t) for t in scenario.resourceTemplates]
        self._overrides: dict[str, list[model.Rule]] = {}
        for o in scenario.methods:
            self._overrides.setdefault(o.method, []).extend(o.replies)
        self._definitions: dict[int, dict[str, Any]] = {}
        self.legacy_initialized = False
        self.unmatched: list[dict[str, Any]] = []  # requests no rule answered, with near misses
        self._rule_labels: dict[int, str] | None = None
        self.track_unknown = False  # set by the verifier: record requests for undefined names in `unmatched`

    # ------------------------------------------------------------ entry points

    def handle(self, msg: jsonrpc.Message) -> Output | None:
        """Plan the answer to one decoded message (``None``: nothing to do)."""
        if isinstance(msg, jsonrpc.Request):
            return self.handle_request(msg)
        if isinstance(msg, jsonrpc.Notification):
            return self.handle_notification(msg)
        return None  # a response from the client: nothing to answer (the verifier notes it)

    def handle_notification(self, note: jsonrpc.Notification) -> Output | None:
        overrides = self._overrides.get(note.method)
        if overrides:
            plan = self._notification_override(note, overrides)
            if plan is not None:
                return plan
        if note.method == p.CANCELLED:
            rid = note.params.get("requestId")
            if jsonrpc.valid_id(rid) and rid in self.in_flight:
                reason = note.params.get("reason")
                # Free the id now, not when the shell gets to it: a later line may reuse it.
                self.finished(rid)
                return Cancel(rid, reason if isinstance(reason, str) else None)
        return None

    def _notification_override(self, note: jsonrpc.Notification, rules: list[model.Rule]) -> Plan | None:
        """A ``methods:`` rule for a notification: the deliberate "response to a notification".

        The request id in templates and in result/error steps is ``null`` (a
        notification has none); ``raw`` can write any id. A matching rule
        replaces the built-in handling (for ``notifications/cancelled`` too).
        """
        meta = note.params.get("_meta")
        req = jsonrpc.Request(None, note.method, note.params, note.message)
        ctx = self._context(req, meta if type(meta) is dict else {})
        chosen = self._select(rules, ctx)
        if chosen is None:
            return None
        rule, steps = chosen
        try:
            plan = self._expand(req, ctx, steps, rule, notification=True)
        except templates.TemplateError:
            return None  # nothing can be answered to a notification, not even this error
        plan.has_id = False
        return plan

    def finished(self, request_id: Any) -> None:
        """The shell tells us a planned request ended (answered or cancelled)."""
        self.in_flight.pop(request_id, None)
        self.subscriptions.pop(request_id, None)

    def handle_request(self, req: jsonrpc.Request) -> Plan:
        rid = req.id
        if rid in self.in_flight:
            raise errors.InvalidRequest(
                f"Invalid Request: id {rid!r} is already in use by a request in flight", request_id=rid
            )
        self.requests_seen += 1
        try:
            plan = self._plan(req)
        except templates.TemplateError as exc:
            # Templates render request values; values that break them are the request's fault.
            raise errors.InvalidParams(f"Invalid params: cannot render the scripted reply: {exc}", request_id=rid) from None
        if not plan.immediate:
            self.in_flight[rid] = req.method
        return plan

    def fan_out(self, emit: Emit) -> list[Send]:
        """Messages that deliver an emitted event to the open subscriptions."""
        out = []
        method = p.EVENT_METHOD[emit.event]
        for sub in list(self.subscriptions.values()):
            if emit.has_only and sub.id != emit.only:
                continue
            if not sub.wants(emit.event, emit.uri):
                continue
            params: dict[str, Any] = {"_meta": {p.META_SUBSCRIPTION_ID: sub.id}}
            if emit.event == "resources/updated":
                params["uri"] = emit.uri
            msg = jsonrpc.notification(method, params)
            out.append(Send(msg, jsonrpc.encode(msg)))
        return out

    def end_all_subscriptions(self) -> list[Any]:
        return list(self.subscriptions)

    # ------------------------------------------------------------ dispatch

    def _plan(self, req: jsonrpc.Request) -> Plan:
        method = req.method
        params = req.params
        proto = self.protocol
        if method == p.DISCOVER and proto.discover != "normal":
            return self._discover_fault(req)
        if proto.era != "modern":
            from . import legacy

            legacy_plan = legacy.plan(self, req)
            if legacy_plan is not None:
                return legacy_plan
        if method == p.INITIALIZE:
            requested = params.get("protocolVersion")
            raise errors.UnsupportedVersion(
                "This server supports only per-request protocol versions "
                f"{', '.join(proto.versions)} (no initialize handshake); send server/discover",
                data={"supported": list(proto.versions), "requested": requested if isinstance(requested, str) else ""},
                request_id=req.id,
            )
        meta = self._check_meta(req)
        if proto.rejectFirst and self.requests_seen == 1:
            raise errors.UnsupportedVersion(
                "Unsupported protocol version",
                data={"supported": list(proto.versions), "requested": meta[p.META_PROTOCOL_VERSION]},
                request_id=req.id,
            )
        ctx = self._context(req, meta)
        overrides = self._overrides.get(method)
        if overrides:
            chosen = self._select(overrides, ctx)
            if chosen is not None:
                rule, steps = chosen
                return self._expand(req, ctx, steps, rule)
        handler = HANDLERS.get(method)
        if handler is None:
            if overrides:
                miss = near_miss(overrides, ctx)
                self.unmatched.append({"id": req.id, "method": method, "what": f"method {method!r}", "nearMiss": miss})
            elif method not in p.REMOVED_METHODS:
                self.note_unknown(req, "method", method, list(HANDLERS) + list(self._overrides))
            raise errors.MethodNotFound(f"Method not found: {method}", request_id=req.id)
        cap = CAPABILITY_FOR.get(method)
        if cap is not None and cap not in self.capabilities:
            raise errors.MethodNotFound(
                f"Method not found: {method} (this server does not offer {cap})", request_id=req.id
            )
        return handler(self, req, ctx)

    def _discover_fault(self, req: jsonrpc.Request) -> Plan:
        mode = self.protocol.discover
        if mode == "method-not-found":
            raise errors.MethodNotFound(f"Method not found: {req.method}", request_id=req.id)
        if mode == "invalid-params":
            raise errors.InvalidParams("Invalid params", request_id=req.id)
        if mode == "silent":
            return Plan(req.id, [Park()], req.method, "protocol.discover: silent")
        return Plan(req.id, [Exit(1)], req.method, "protocol.discover: exit")

    def _check_meta(self, req: jsonrpc.Request) -> dict[str, Any]:
        meta = req.params.get("_meta")
        if type(meta) is not dict:
            raise errors.InvalidParams(
                f"Invalid params: missing params._meta (it must carry {p.META_PROTOCOL_VERSION} "
                f"and {p.META_CLIENT_CAPABILITIES})",
                request_id=req.id,
            )
        version = meta.get(p.META_PROTOCOL_VERSION)
        if version is None:
            raise errors.InvalidParams(
                f"Invalid params: missing _meta[{p.META_PROTOCOL_VERSION!r}]", request_id=req.id
            )
        if type(version) is not str:
            raise errors.InvalidParams(f"Invalid params: _meta[{p.META_PROTOCOL_VERSION!r}] must be a string", request_id=req.id)
        caps = meta.get(p.META_CLIENT_CAPABILITIES)
        if caps is None:
            raise errors.InvalidParams(
                f"Invalid params: missing _meta[{p.META_CLIENT_CAPABILITIES!r}]", request_id=req.id
            )
        if type(caps) is not dict:
            raise errors.InvalidParams(
                f"Invalid params: _meta[{p.META_CLIENT_CAPABILITIES!r}] must be an object", request_id=req.id
            )
        if version not in self.protocol.versions:
            raise errors.UnsupportedVersion(
                "Unsupported protocol version",
                data={"supported": list(self.protocol.versions), "requested": version},
                request_id=req.id,
            )
        level = meta.get(p.META_LOG_LEVEL)
        if level is not None and (type(level) is not str or level not in p.LOG_LEVEL_RANK):
            raise errors.InvalidParams(
                f"Invalid params: _meta[{p.META_LOG_LEVEL!r}] must be one of {', '.join(p.LOG_LEVELS)}",
                request_id=req.id,
            )
        token = meta.get(p.META_PROGRESS_TOKEN)
        if token is not None and type(token) not in (str, int):
            raise errors.InvalidParams("Invalid params: _meta.progressToken must be a string or an integer", request_id=req.id)
        return meta

    def _context(self, req: jsonrpc.Request, meta: dict[str, Any]) -> dict[str, Any]:
        params = req.params
        args = params.get("arguments")
        return {
            "id": req.id,
            "method": req.method,
            "params": params,
            "meta": meta,
            "arguments": args if isinstance(args, dict) else {},
            "name": params.get("name"),
            "uri": params.get("uri"),
            "vars": {},
            "round": 1,
            "inputResponses": {},
            "state": self.state,
        }

    # ------------------------------------------------------------ rules

    def _select(self, rules: list[model.Rule], ctx: dict[str, Any]) -> tuple[model.Rule, list[model.Step]] | None:
        for rule in rules:
            when = rule.when
            if not matches(when, ctx):
                continue
            key = id(rule)
            count = self._counters.get(key, 0) + 1
            self._counters[key] = count
            if when.nth is not None and count != when.nth:
                continue
            if when.every is not None and count % when.every:
                continue
            if when.first is not None and count > when.first:
                continue
            if when.after is not None and count <= when.after:
                continue
            if when.probability is not None and self.rng.random() >= when.probability:
                continue
            if rule.sequence is not None:
                used = self._sequence_use.get(key, 0)
                self._sequence_use[key] = used + 1
                n = len(rule.sequence)
                return rule, rule.sequence[used % n if rule.cycle else min(used, n - 1)]
            return rule, rule.steps or _NO_STEPS
        return None

    def _answer(self, req: jsonrpc.Request, ctx: dict[str, Any], rules: list[model.Rule], kind: str, name: str) -> Plan:
        """Answer with the first matching rule of ``kind`` ``name`` (a tool, prompt, ...)."""
        if "reask" in ctx:
            return self._reask(req, ctx)
        chosen = self._select(rules, ctx)
        if chosen is None:
            what = f"{kind} {name!r}"
            miss = near_miss(rules, ctx)
            self.unmatched.append({"id": req.id, "method": req.method, "what": what, "nearMiss": miss})
            raise errors.ScriptedError(
                p.INTERNAL_ERROR,
                f"mockmcp: no rule of {what} matched this request" + (f" ({miss['reason']})" if miss else ""),
                data={"nearMiss": miss} if miss else errors._ABSENT,
                request_id=req.id,
            )
        rule, steps = chosen
        return self._expand(req, ctx, steps, rule)

    # ------------------------------------------------------------ steps -> actions

    def _expand(
        self,
        req: jsonrpc.Request,
        ctx: dict[str, Any],
        steps: Iterable[model.Step],
        rule: model.Rule | None,
        *,
        subscription: bool = False,
        notification: bool = False,
    ) -> Plan:
        replies = self._replies
        if replies is not None and not subscription and not notification and type(steps) is list:
            entry = replies.get(id(steps))
            if entry is None or entry[0] != req.method:
                # Scenario step lists live as long as the engine, so their id is a stable key;
                # the method is part of the answer's envelope, so another method compiles anew.
                entry = replies[id(steps)] = (req.method, compile_reply(self, req, steps))
            if entry[1] is not None:
                send = entry[1].send(req, ctx)
                if send is not None:
                    return Plan(req.id, [send], req.method, self.rule_label(rule) if rule is not None else None, True)
        actions: list[Action] = []
        meta = ctx["meta"]
        token = meta.get(p.META_PROGRESS_TOKEN)
        level = meta.get(p.META_LOG_LEVEL)
        scale = self.time_scale
        if id(steps) not in self._loop_free:
            if isinstance(steps, list) and not any(type(s) is model.LoopStep for s in steps):
                self._loop_free.add(id(steps))  # scenario step lists live as long as the engine
            else:
                steps = self._unroll(req, steps, ctx)
        for step in steps:
            t = type(step)
            if t is model.ResultStep:
                actions.append(self._final(req, self._complete(req, templates.render(step.result, ctx))))
                break
            if t is model.TextStep:
                text = templates.render(step.text, ctx)
                actions.append(self._final(req, self._complete(req, self._text_result(req, ctx, _str(text)))))
                break
            if t is model.ErrorStep:
                e = step.error
                actions.append(self._error(req, e.code, e.message, templates.render(e.data, ctx), ctx))
                break
            if t is model.InputRequiredStep:
                actions.append(self._input_required(req, ctx, step.inputRequired))
                break
            if t is model.SleepStep:
                d = step.sleep
                seconds = d.seconds if type(d) is model.Duration else self.rng.uniform(d.min.seconds, d.max.seconds)
                actions.append(Sleep(seconds * scale))
            elif t is model.ProgressStep:
                if token is not None:
                    pr = step.progress
                    prm = drop_none({"progressToken": token, "progress": _number(req, pr.progress, ctx),
                                      "total": _number(req, pr.total, ctx), "message": templates.render(pr.message, ctx)})
                    actions.append(self._send(jsonrpc.notification(p.PROGRESS, prm)))
            elif t is model.LogStep:
                lg = step.log
                if level is not None and p.LOG_LEVEL_RANK[lg.level] >= p.LOG_LEVEL_RANK[level]:
                    prm = drop_none({"level": lg.level, "logger": lg.logger})
                    prm["data"] = templates.render(lg.data, ctx)
                    actions.append(self._send(jsonrpc.notification(p.MESSAGE, prm)))
            elif t is model.EmitStep:
                uri = templates.render(step.emit.uri, ctx)
                if subscription:
                    actions.append(Emit(step.emit.event, uri, req.id, True))
                else:
                    actions.append(Emit(step.emit.event, uri))
            elif t is model.SetStateStep:
                self.state = step.setState
                ctx["state"] = self.state
            elif t is model.EndSubscriptionStep:
                if step.endSubscription.how == "cancelled":
                    msg = jsonrpc.notification(p.CANCELLED, {"requestId": req.id, "reason": "subscription ended by the server"})
                    actions.append(Send(msg, jsonrpc.encode(msg), final=True))
                else:
                    result = self._complete(req, {"_meta": {p.META_SUBSCRIPTION_ID: req.id}})
                    actions.append(self._final(req, result))
                break
            elif t is model.RawStep:
                actions.append(WriteRaw(jsonrpc.encode(templates.render(step.raw, ctx))))
            elif t is model.RawBytesStep:
                actions.append(WriteRaw(templates.render(step.rawBytes, ctx).encode("latin-1")))
            elif t is model.HangStep:
                actions.append(Park())
                break
            elif t is model.ExitStep:
                partial = b""
                if step.exit.partialBytes is not None:
                    partial = jsonrpc.encode(
                        jsonrpc.result_response(req.id, self._complete(req, self._text_result(req, ctx, "")))
                    )[: step.exit.partialBytes]
                actions.append(Exit(step.exit.status, partial))
                break
            elif t is model.DribbleStep:
                actions.append(Dribble(max(1, step.dribble.chunkBytes), step.dribble.pause.seconds * scale))
            elif t is model.StderrStep:
                actions.append(Stderr(templates.render(step.stderr, ctx), step.repeat))
            elif t is model.StopReadingStep:
                d = step.stopReading
                actions.append(StopReading(None if d == "forever" else d.seconds * scale))
            elif t is model.CloseStdoutStep:
                actions.append(CloseStdout())
            elif t is model.HugeStep:
                text = step.huge.char * max(0, step.huge.bytes // max(1, len(step.huge.char.encode())))
                actions.append(self._final(req, self._complete(req, self._text_result(req, ctx, text))))
                break
            else:  # pragma: no cover - every step type is handled above
                raise AssertionError(f"unhandled step {step!r}")
        else:
            if subscription:
                actions.append(Park())
            elif notification:
                pass  # a notification's rule need not answer (raw steps may have lied already)
            else:
                # The checker rejects replies without a final step; be loud if one slips through.
                actions.append(self._error(req, p.INTERNAL_ERROR, "mockmcp: the scripted reply ended without an answer", None, ctx))
        immediate = True
        for a in actions:
            if type(a) is not Send:
                immediate = False
                break
        return Plan(req.id, actions, req.method, self.rule_label(rule) if rule is not None else None, immediate)

    def note_unknown(self, req: jsonrpc.Request, kind: str, name: str, known: list[str]) -> None:
        """Record a request for something the scenario does not define, with the closest name it does.

        Only when the verifier listens (``track_unknown``): plain runs skip the name search.
        """
        if not self.track_unknown:
            return
        import difflib

        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        miss = {"rule": close[0], "reason": f"the scenario defines no {kind} {name!r}; did you mean {close[0]!r}?"} if close else None
        self.unmatched.append({"id": req.id, "method": req.method, "what": f"{kind} {name!r}", "undefined": True, "nearMiss": miss})

    def rule_label(self, rule: model.Rule) -> str:
        """A rule's name, or where it is in the scenario (``$.tools[0].replies[1]``) for the journal."""
        if rule.name is not None:
            return rule.name
        labels = self._rule_labels
        if labels is None:
            from .check import iter_rules
            from .problems import format_path

            labels = self._rule_labels = {id(r): format_path(path) for path, _, r in iter_rules(self.scenario)}
        return labels.get(id(rule), "?")

    def _unroll(self, req: jsonrpc.Request, steps: Iterable[model.Step], ctx: dict[str, Any]) -> Iterable[model.Step]:
        """The steps with every ``loop`` unrolled; ``ctx["index"]`` is set as each repetition starts."""
        for step in steps:
            if type(step) is not model.LoopStep:
                yield step
                continue
            times = _number(req, step.loop.times, ctx)
            if type(times) is not int and not (type(times) is float and times.is_integer()):
                raise errors.InvalidParams(f"Invalid params: loop count {times!r} is not a whole number", request_id=req.id)
            outer = ctx.get("index")
            for i in range(min(int(times), _MAX_REPEAT)):
                ctx["index"] = i + 1
                yield from self._unroll(req, step.loop.steps, ctx)
            ctx["index"] = outer

    def _send(self, msg: dict[str, Any], final: bool = False) -> Send:
        return Send(msg, jsonrpc.encode(msg), final)

    def _final(self, req: jsonrpc.Request, result: dict[str, Any]) -> Send:
        msg = {"jsonrpc": "2.0", "id": req.id, "result": result}
        return Send(msg, jsonrpc.encode(msg), True)

    def _error(self, req: jsonrpc.Request, code: int, message: str | None, data: Any, ctx: dict[str, Any]) -> Send:
        err: dict[str, Any] = {"code": code, "message": templates.render(message, ctx) if message is not None else _DEFAULT_MESSAGES.get(code, "Error")}
        if data is not None:
            err["data"] = data
        return self._send({"jsonrpc": p.JSONRPC_VERSION, "id": req.id, "error": err}, True)

    def _complete(self, req: jsonrpc.Request, result: Any, *, hints: tuple[int | None, str | None] = (None, None)) -> dict[str, Any]:
        """Fill in what every complete result carries."""
        if type(result) is not dict:
            result = {"value": result}
        out = dict(result)
        if "resultType" not in out:
            out["resultType"] = "complete"
        if self.protocol.serverInfo:
            meta = out.get("_meta")
            if type(meta) is not dict:
                out["_meta"] = self._server_meta  # shared: results are never mutated after planning
            elif p.META_SERVER_INFO not in meta:
                out["_meta"] = {**meta, p.META_SERVER_INFO: self.server_info}
        if req.method in p.CACHEABLE and out["resultType"] == "complete":
            ttl, scope = self._cache_hints(req.method, hints)
            out.setdefault("ttlMs", ttl)
            out.setdefault("cacheScope", scope)
        return out

    def _cache_hints(self, method: str, override: tuple[int | None, str | None]) -> tuple[int, str]:
        c = self.scenario.cache
        block = {
            p.DISCOVER: c.discover,
            p.TOOLS_LIST: c.tools,
            p.PROMPTS_LIST: c.prompts,
            p.RESOURCES_LIST: c.resources,
            p.RESOURCE_TEMPLATES_LIST: c.resourceTemplates,
            p.RESOURCES_READ: c.read,
        }.get(method)
        ttl, scope = c.ttlMs, c.cacheScope
        if block is not None:
            ttl = block.ttlMs if block.ttlMs is not None else ttl
            scope = block.cacheScope or scope
        if override[0] is not None:
            ttl = override[0]
        if override[1] is not None:
            scope = override[1]
        return ttl, scope

    def _text_result(self, req: jsonrpc.Request, ctx: dict[str, Any], text: str) -> dict[str, Any]:
        if req.method == p.PROMPTS_GET:
            return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        if req.method == p.RESOURCES_READ:
            return {"contents": [{"uri": ctx["uri"], "text": text}]}
        return {"content": [{"type": "text", "text": text}]}

    def _input_required(self, req: jsonrpc.Request, ctx: dict[str, Any], spec: model.InputRequiredSpec) -> Send:
        requests = templates.render(spec.inputRequests, ctx)
        user = spec.requestState if isinstance(spec.requestState, str) else None
        return self._ask(req, ctx, requests, spec.requestState is not False, templates.render(user, ctx), ctx["round"], None)

    def _ask(
        self,
        req: jsonrpc.Request,
        ctx: dict[str, Any],
        requests: dict[str, Any],
        with_state: bool,
        user: Any,
        round: int,
        answers: dict[str, Any] | None,
    ) -> Send:
        """An input_required result (or -32021 if the client cannot answer it)."""
        if self.protocol.checkCapabilities:
            missing = mrtr.missing_capabilities(requests, ctx["meta"].get(p.META_CLIENT_CAPABILITIES) or {})
            if missing:
                return self._send(
                    errors.MissingClientCapability(
                        "Missing required client capability: this request needs "
                        + ", ".join(mrtr.describe_capabilities(missing)),
                        data={"requiredCapabilities": missing},
                        request_id=req.id,
                    ).response(),
                    True,
                )
        result: dict[str, Any] = {"resultType": "input_required"}
        if requests:
            result["inputRequests"] = requests
        if with_state:
            asked = {k: v.get("method") for k, v in requests.items() if isinstance(v, dict)}
            result["requestState"] = self.state_codec.issue(
                mrtr.origin(req.method, ctx), round, asked, user, requests, answers
            )
        if self.protocol.serverInfo:
            result["_meta"] = {p.META_SERVER_INFO: self.server_info}
        return self._final(req, result)

    # ------------------------------------------------------------ MRTR

    def _rounds(self, req: jsonrpc.Request, ctx: dict[str, Any]) -> None:
        """Fill ``round`` and ``inputResponses`` from a retry's state and answers."""
        params = req.params
        responses = params.get("inputResponses")
        if responses is not None and type(responses) is not dict:
            raise errors.InvalidParams("Invalid params: inputResponses must be an object", request_id=req.id)
        responses = responses or {}
        ctx["inputResponses"] = responses
        state = params.get("requestState")
        if state is None:
            ctx["round"] = 2 if responses else 1
            return
        if type(state) is not str:
            raise errors.InvalidParams("Invalid params: requestState must be a string", request_id=req.id)
        try:
            decoded = self.state_codec.verify(state)
        except mrtr.StateError as exc:
            raise errors.InvalidParams(f"Invalid params: requestState rejected: {exc}", request_id=req.id) from None
        if decoded.origin != mrtr.origin(req.method, ctx):
            raise errors.InvalidParams(
                "Invalid params: requestState was issued for a different request "
                f"({decoded.describe_origin()}), not this {req.method} with these arguments",
                request_id=req.id,
            )
        for key, kind in decoded.asked.items():
            if key in responses:
                problem = mrtr.check_response(kind, responses[key])
                if problem:
                    raise errors.InvalidParams(
                        f"Invalid params: inputResponses[{key!r}] is not a valid answer to {kind}: {problem}",
                        request_id=req.id,
                    )
        missing = [k for k in decoded.asked if k not in responses]
        # Answers given in earlier retries of this round (when one was missing) count too.
        merged = {**decoded.answers, **{k: responses[k] for k in decoded.asked if k in responses}}
        ctx["inputResponses"] = {**responses, **merged}
        ctx["round"] = decoded.round if missing else decoded.round + 1
        ctx["missingInputs"] = missing
        ctx["requestState"] = decoded.user
        if missing:
            # The spec's SHOULD: ask again for what is missing rather than fail.
            ctx["reask"] = (decoded, {k: decoded.requests[k] for k in missing if k in decoded.requests}, merged)

    def _reask(self, req: jsonrpc.Request, ctx: dict[str, Any]) -> Plan:
        decoded, requests, answers = ctx["reask"]
        send = self._ask(req, ctx, requests, True, decoded.user, decoded.round, answers)
        return Plan(req.id, [send], req.method, "mockmcp: ask again for missing inputResponses", True)


# One shared empty step list: step lists are keyed by id() (loop-free set, compiled replies),
# which is only sound for lists that live as long as the engine.
_NO_STEPS: list[model.Step] = []

_MAX_REPEAT = 100_000  # a template-given count cannot make a plan without end


def _number(req: jsonrpc.Request, value: Any, ctx: dict[str, Any]) -> Any:
    """A number written as such or as a template; a request value that is no number -> -32602."""
    if type(value) is not str:
        return value
    rendered = templates.render(value, ctx)
    if type(rendered) in (int, float):
        return rendered
    try:
        return templates._num(rendered)
    except (templates.TemplateError, ValueError):
        raise errors.InvalidParams(f"Invalid params: {rendered!r} is not a number (from {value!r})", request_id=req.id) from None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else templates._text(value)


