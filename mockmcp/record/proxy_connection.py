"""The proxy's connection: client lines in; plans for the requests a fault rule takes, the rest passed on.

``mockmcp proxy`` puts the scenario format's faults in front of a real server. The
faults file is an ordinary scenario whose rules aim at the traffic: ``methods:``
rules by method, and the ``replies`` of a tool, prompt, resource or resource
template by name or uri (those entries only aim rules; the real server's lists
are what the client sees). Selection is the engine's own ``Selector`` (``when``,
``nth``/``every``/``first``/``after``/``probability``, sequences, named state) and
the chosen steps are expanded by the engine's own ``StepExpander``: a delay, a
dribble, garbage, an exit, or a scripted answer instead of the server's; a
``forward`` step hands the request to the real server at that point and says
what becomes of its answer. A request no rule takes is passed on unchanged, and
so is every notification, client answer and line that is not JSON-RPC at all
(the real server answers those its own way).

Like ``Connection``, this is where a ``ClientError`` met while planning becomes
the request's error response, and where observers (the journal and the client
checks of ``mockmcp run --journal/--report/--strict``) see every inbound line.
Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.core.actions import Cancel, Output, Plan, Send
from mockmcp.core.context import RequestContext
from mockmcp.scenario.uritemplates import UriTemplate, compile_uri_template
from mockmcp.core.engine import Engine
from mockmcp.wire.framing import LineSplitter

InboundObserver = Callable[[bytes, "jsonrpc.Message | None", "errors.ClientError | None"], None]
class ProxyConnection:
    watch: ClassVar[None] = None  # (connection.StdioConnection: nothing shared to watch)

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.protocol = engine.protocol
        self.splitter = LineSplitter()
        self.observers: list[InboundObserver] = []
        self.plan_observers: list[Callable[[Plan], None]] = []
        self.forward: list[bytes] = []  # lines to pass on now, in order
        self.owed: list[Any] = []  # ids of the requests among them (answers the server owes)
        self.given_up: list[Any] = []  # ids the client cancelled (the server may never answer)
        self.lines: dict[Any, bytes] = {}  # the line of each request a plan may still forward
        scenario = engine.scenario
        self._methods: dict[str, list[model.Rule]] = {}
        for o in scenario.methods:
            self._methods.setdefault(o.method, []).extend(o.replies)
        self._named: dict[tuple[str, str], list[model.Rule]] = {}
        for tool in scenario.tools:
            self._named.setdefault((p.TOOLS_CALL, tool.name), []).extend(tool.replies)
        for prompt in scenario.prompts:
            self._named.setdefault((p.PROMPTS_GET, prompt.name), []).extend(prompt.replies)
        for res in scenario.resources:
            self._named.setdefault((p.RESOURCES_READ, res.uri), []).extend(res.replies)
        self._templates: list[tuple[UriTemplate, list[model.Rule]]] = []
        for tmpl in scenario.resourceTemplates:
            self._templates.append((compile_uri_template(tmpl.uriTemplate), tmpl.replies))
        self._aimed = frozenset(self._methods) | {m for m, _ in self._named} | (
            {p.RESOURCES_READ} if self._templates else set())

    def receive_data(self, data: bytes) -> list[Output]:
        return self._lines(self.splitter.feed(data))

    def receive_eof(self) -> list[Output]:
        return self._lines(self.splitter.close())

    def _lines(self, lines: list[bytes]) -> list[Output]:
        out: list[Output] = []
        for line in lines:
            result = self.handle_line(line)
            if result is not None:
                out.append(result)
        return out

    def take_forward(self) -> tuple[list[bytes], list[Any], list[Any]]:
        """The lines to pass on now, the ids of the requests among them, the ids the client cancelled."""
        out = self.forward, self.owed, self.given_up
        self.forward, self.owed, self.given_up = [], [], []
        return out

    def handle_line(self, line: bytes) -> Output | None:
        try:
            msg = jsonrpc.decode(line)
        except errors.ClientError as exc:
            self._observe(line, None, exc)
            self.forward.append(line)  # not ours to judge: the real server answers it
            return None
        self._observe(line, msg, None)
        if type(msg) is jsonrpc.Request:
            plan = self._fault(msg, line) if msg.method in self._aimed else None
            if plan is None:
                self.forward.append(line)
                self.owed.append(msg.id)
                return None
            for see in self.plan_observers:
                see(plan)
            return plan
        self.forward.append(line)
        if type(msg) is jsonrpc.Notification and msg.method == p.CANCELLED:
            rid = msg.params.get("requestId")
            if jsonrpc.valid_id(rid):
                self.given_up.append(rid)
            if jsonrpc.valid_id(rid) and rid in self.engine.session.in_flight:
                self.engine.session.finished(rid)
                self.lines.pop(rid, None)
                return Cancel(rid)
        return None

    def _fault(self, req: jsonrpc.Request, line: bytes) -> Plan | None:
        meta = req.params.get("_meta")
        ctx = RequestContext(req, meta if type(meta) is dict else {}, self.engine.session.state)
        rules = list(self._methods.get(req.method, ()))
        target = req.params.get("name") if req.method != p.RESOURCES_READ else req.params.get("uri")
        if type(target) is str:
            rules.extend(self._named.get((req.method, target), ()))
            if req.method == p.RESOURCES_READ and (p.RESOURCES_READ, target) not in self._named:
                for pattern, replies in self._templates:
                    found = pattern.match(target)
                    if found is not None:  # (an empty dict too: a template without variables)
                        ctx.set_vars(found)
                        rules.extend(replies)
                        break
        if not rules:
            return None
        svc = self.engine.services
        chosen = svc.selector.select(rules, ctx)
        if chosen is None:
            return None
        try:
            plan = svc.expand(ctx, chosen.steps, chosen.rule)
        except (errors.ClientError, templates.TemplateError) as exc:
            # the one place a planning mistake becomes the request's error response (as in Connection)
            if isinstance(exc, errors.ClientError):
                response = errors.error_response(req.id, exc.code, exc.message, exc.data)
            else:
                response = errors.error_response(req.id, p.INVALID_PARAMS, f"Invalid params: cannot render the scripted reply: {exc}")
            return Plan(req.id, [Send(response, jsonrpc.encode(response), True)], req.method, None, immediate=True)
        self.lines[req.id] = line
        if not plan.immediate:
            self.engine.session.begin(req.id, req.method)
        return plan

    def _observe(self, line: bytes, msg: jsonrpc.Message | None, exc: errors.ClientError | None) -> None:
        for observer in self.observers:
            observer(line, msg, exc)

    def finished(self, request_id: Any) -> None:
        self.lines.pop(request_id, None)
        self.engine.finished(request_id)


__all__ = ["LineSplitter", "ProxyConnection"]  # LineSplitter lives in .framing
