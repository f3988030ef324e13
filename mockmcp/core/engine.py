"""The engine: one decoded message in, one plan out — the pipeline every request goes through.

In order: a reused id is refused; ``protocol.discover`` faults; the legacy era
may take the request; ``initialize`` is refused the modern way; the
per-request ``_meta`` and the version are checked; a ``methods:`` override may
answer; the server capability behind the method is checked; the method's
handler answers. Everything else lives in its own module and is handed in
here: the session's state (``session``), result envelopes (``envelope``),
rule selection (``selection``), step expansion (``steps``), MRTR rounds
(``rounds``), the override -> handler stages both eras share (``pipeline``),
the handlers (``methods``) and the interface they see (``services``). Every
collaborator is made here and handed to its users' constructors. The HMAC key and the random generator come from the shell, so
this stays plain synchronous code without I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario.model import base as model
from mockmcp.wire import mrtr
from mockmcp.wire import protocol as p
from mockmcp.scenario import matching, templates
from mockmcp.core.actions import Answer, Cancel, Emit, Exit, Output, Park, Plan, Send
from mockmcp.core.context import RequestContext
from mockmcp.scenario.definitions import derive_capabilities, iter_rules, scenario_facts
from mockmcp.core.effects import Effects
from mockmcp.core.envelope import Envelope
from mockmcp.core.methods import HANDLERS
from mockmcp.core.pipeline import MODERN, MethodPipeline
from mockmcp.core.replies import ReplyCache
from mockmcp.core.rounds import Rounds
from mockmcp.core.selection import Random, Selector
from mockmcp.core.services import Services
from mockmcp.core.session import Session
from mockmcp.core.steps import StepExpander
from mockmcp.core.tasks import TaskTable

if TYPE_CHECKING:
    from mockmcp.core.legacy import LegacyEra


class Engine:
    """Turns inbound JSON-RPC messages into plans, following one scenario."""

    def __init__(
        self,
        scenario: model.Scenario,
        *,
        state_key: bytes,
        rng: Random,
        time_scale: float = 1.0,
        compile_replies: bool = True,
        clock: Callable[[], float] | None = None,
        shared_ids: bool = False,
        track_unknown: bool = False,
        task_lookup: Callable[[str], str | None] | None = None,
        task_archived_ids: Callable[[], list[str]] | None = None,
    ) -> None:
        """``shared_ids``: over HTTP ids are unique per sender only, and the server cannot tell
        senders apart, so an id another request holds is not refused (the HTTP shell counts who
        holds it). ``track_unknown``: requests for undefined names are noted with the closest
        defined one (the verifier). ``task_lookup``: where a task neither kept nor read is looked
        for last (a session directory's archive: the id -> its JSON text, or ``None``), and
        ``task_archived_ids`` what it can find."""
        self.scenario = scenario
        self.protocol = scenario.protocol
        session = self.session = Session(scenario.state.initial)
        facts = scenario_facts(scenario)
        capabilities = scenario.capabilities if scenario.capabilities is not None else derive_capabilities(scenario, facts)
        envelope = self.envelope = Envelope(scenario)
        key = scenario.protocol.stateKey.encode() if scenario.protocol.stateKey else state_key
        rounds = Rounds(envelope, mrtr.StateCodec(key), check_capabilities=scenario.protocol.checkCapabilities)
        # Tasks (the extension): always a table, empty for most scenarios (the control channel may
        # add a tool that makes tasks), on the shell's clock.
        # A task's outcome is built like any reply, by the step expander, which is made after the
        # table it hands task steps to: the table is given a function that reaches it once made.
        tasks = self.tasks = TaskTable(
            facts[0], envelope, clock or _no_time, time_scale, key, state=lambda: session.state,
            lookup=task_lookup, archived_ids=task_archived_ids, render_outcome=lambda ctx, outcome: steps.outcome(ctx, outcome),
        )
        steps = StepExpander(envelope, session, rounds, ReplyCache(envelope) if compile_replies else None, rng, time_scale, tasks)
        # uuid(), now(), counter() in templates: the shell's generator and clock, per-process counters
        self.effects = Effects(rng, clock)
        overrides: dict[str, list[model.Rule]] = {}
        for o in scenario.methods:
            overrides.setdefault(o.method, []).extend(o.replies)
        self.services = Services(
            scenario, capabilities, envelope, session, Selector(session, rng), steps, rounds,
            tasks=tasks, effects=self.effects, overrides=overrides, track_unknown=track_unknown,
        )
        self.pipeline = MethodPipeline(self.services, HANDLERS, overrides)
        self.shared_ids = shared_ids
        self._rules_in_order: list[object] | None = None
        self._state_seen = session.state  # (take_task_changes: a new state may end a task phase)
        self._legacy: LegacyEra | None = None
        if scenario.protocol.era != "modern":
            from mockmcp.core.legacy import LegacyEra  # (modern scenarios, most spawns, skip its import)

            self._legacy = LegacyEra(self.services, self.pipeline)

    # ------------------------------------------------------------ entry points

    def handle(self, msg: jsonrpc.Message) -> Output | None:
        """Plan the answer to one decoded message (``None``: nothing to do)."""
        if type(msg) is jsonrpc.Request:  # the common case, without the class pattern's checks
            return self.handle_request(msg)
        match msg:
            case jsonrpc.Notification():
                return self.handle_notification(msg)
            case jsonrpc.ClientResponse() if jsonrpc.valid_id(msg.id) and msg.id in self.session.legacy.pending:
                return Answer(msg.id, msg.message)  # the answer a legacy `request` step waits for
        return None  # any other response from the client: nothing to answer (the verifier notes it)

    def handle_request(self, req: jsonrpc.Request) -> Plan:
        session = self.session
        if req.id in session.in_flight and not self.shared_ids:
            raise errors.InvalidRequest(
                f"Invalid Request: id {req.id!r} is already in use by a request in flight", request_id=req.id
            )
        session.requests_seen += 1
        work = matching.REGEX_WORK
        work.start()
        try:
            plan = self._plan(req)
        except templates.TemplateError as exc:
            # Templates render request values; values that break them are the request's fault.
            raise errors.InvalidParams(f"Invalid params: cannot render the scripted reply: {exc}", request_id=req.id) from None
        except matching.RegexBudgetExceeded as exc:
            # The request's strings would keep the server searching for seconds: its fault too.
            raise errors.InvalidParams(f"Invalid params: {exc}", request_id=req.id) from None
        finally:
            work.stop()
        if not plan.immediate:
            session.begin(req.id, req.method)
        return plan

    def handle_notification(self, note: jsonrpc.Notification) -> Output | None:
        plan = self.pipeline.notification(note)  # a methods: rule for it replaces the built-in handling
        if plan is not None:
            return plan
        if note.method == p.CANCELLED:
            rid = note.params.get("requestId")
            if jsonrpc.valid_id(rid) and rid in self.session.in_flight:
                reason = note.params.get("reason")
                # Free the id now, not when the shell gets to it: a later line may reuse it.
                self.session.finished(rid)
                return Cancel(rid, reason if isinstance(reason, str) else None)
        return None

    def finished(self, request_id: Any) -> None:
        """The shell tells us a planned request ended (answered or cancelled)."""
        self.session.finished(request_id)
        if self.tasks.watchers:
            self.tasks.unwatch(request_id)

    def subscription_ends(self) -> list[Send]:
        """The answers that end every open listen stream, when the server ends them itself (a graceful
        shutdown): each one's completion result (``Envelope.listen_closed``), in the order they opened.
        The shell writes them, then finishes each stream as it closes it (as for any ended request)."""
        return [self.envelope.listen_closed(sid) for sid in self.session.subscriptions]

    # ------------------------------------------------------------ a session kept across processes

    def export_state(self) -> dict[str, Any]:
        """What a session directory keeps besides task records: named state, rule counters, the
        task serial (plain JSON; ``sessiondir`` writes it, and another process imports it)."""
        return {"state": self.session.state, "counters": self.session.export_counters(self._rule_order()), "serial": self.tasks.serial}

    def import_state(self, data: dict[str, Any]) -> None:
        """Take another process's ``export_state``; ``ValueError`` (nothing taken) if it does not fit."""
        rules = self._rule_order()
        if type(data) is not dict:
            raise ValueError("not an object")
        state, counters, serial = data.get("state"), data.get("counters", {}), data.get("serial", 0)
        if "state" in data and type(state) is not str:
            raise ValueError("'state' must be a string")
        if type(serial) is not int or serial < 0:
            raise ValueError("'serial' must be an integer >= 0")
        if type(counters) is not dict or not all(
            type(k) is str and k.isdigit() and int(k) < len(rules)
            and type(v) is list and len(v) == 2 and all(type(n) is int and n >= 0 for n in v)
            for k, v in counters.items()
        ):
            raise ValueError("'counters' must map rule places to [matched, used] counts")
        if type(state) is str:
            self.session.set_state(state)
        self.session.import_counters(rules, counters)
        self.tasks.serial = max(self.tasks.serial, serial)

    def _rule_order(self) -> list[object]:
        """Every rule in file order: counters are kept by place, since objects do not outlive a process."""
        if self._rules_in_order is None:
            self._rules_in_order = [rule for _, _, rule in iter_rules(self.scenario)]
        return self._rules_in_order

    def take_task_changes(self) -> bool:
        """Did tasks change since the last call? (The shell then wakes task streams.)

        A new named state counts when streams watch tasks: a phase scripted on the
        state ends when it changes (by a request here, or read from another process),
        not when the task is next looked at."""
        tasks = self.tasks
        state = self.session.state
        if state != self._state_seen:
            self._state_seen = state
            if tasks.watchers:
                tasks.changed = True
        if not tasks.changed:
            return False
        tasks.changed = False
        return True

    def task_notifications(self) -> list[Send]:
        """``notifications/tasks`` for the listen streams whose watched tasks changed behind their
        back (another process of the session, the control channel): ``TaskTable.notify_watchers``."""
        if not self.tasks.watchers:
            return []
        subscriptions = self.session.subscriptions
        return self.tasks.notify_watchers(lambda sid: sid in subscriptions)

    def fan_out(self, emit: Emit) -> list[Send]:
        """Messages that deliver an emitted event to the open subscriptions that want it."""
        method = p.EVENT_METHOD[emit.event]
        out = []
        if self.session.legacy_initialized and not emit.has_only:
            out += self._legacy.fan_out(emit, method) if self._legacy is not None else []
        for sid in self.session.listeners(emit.event, emit.uri, emit.only, emit.has_only):
            params: dict[str, Any] = {"_meta": {p.META_SUBSCRIPTION_ID: sid}}
            if emit.event == "resources/updated":
                params["uri"] = emit.uri
            out.append(self.envelope.notification(method, params))
        return out

    def replace_scenario(self, scenario: model.Scenario) -> None:
        """Serve ``scenario``'s primitives from now on (the control channel added, replaced or
        removed one); derived capabilities grow with what it defines, and never shrink."""
        self.scenario = scenario
        caps = scenario.capabilities
        if caps is None:  # what it defines now, and whatever was offered before (a client may rely on it)
            caps = {**derive_capabilities(scenario), **self.services.capabilities}
        self.services.replace_primitives(scenario, caps)

    @property
    def unmatched(self) -> list[dict[str, Any]]:
        """Requests no rule answered, with their near misses (read by the verifier)."""
        return self.session.unmatched

    # ------------------------------------------------------------ the pipeline

    def _plan(self, req: jsonrpc.Request) -> Plan:
        method = req.method
        proto = self.protocol
        if method == p.DISCOVER and proto.discover != "normal":
            return _discover_fault(req, proto.discover)
        if method == p.INITIALIZE and proto.era != "legacy" and _claims_stateless(req):
            # Revision 2026-07-28 has no handshake: an initialize carrying its envelope is a request
            # of that revision for a method it does not define. A bare initialize (the dual-era
            # clients' fallback) is still answered below, the legacy or the modern-only way.
            raise errors.MethodNotFound(
                f"Method not found: {p.INITIALIZE} (revision {p.LATEST_VERSION} has no initialize handshake;"
                " send server/discover)",
                request_id=req.id,
            )
        if self._legacy is not None:
            legacy_plan = self._legacy.plan(req)
            if legacy_plan is not None:
                return legacy_plan
        if method == p.INITIALIZE:
            requested = req.params.get("protocolVersion")
            raise errors.UnsupportedVersion(
                "This server supports only per-request protocol versions "
                f"{', '.join(proto.versions)} (no initialize handshake); send server/discover",
                data={"supported": list(proto.versions), "requested": requested if isinstance(requested, str) else ""},
                request_id=req.id,
            )
        meta = _checked_meta(req, proto.versions)
        if proto.rejectFirst and self.session.requests_seen == 1:
            raise errors.UnsupportedVersion(
                "Unsupported protocol version",
                data={"supported": list(proto.versions), "requested": meta[p.META_PROTOCOL_VERSION]},
                request_id=req.id,
            )
        ctx = RequestContext(req, meta, self.session.state, self.effects)
        if self.session.armed:  # one-shot overrides from the control channel win over every rule
            from mockmcp.core import armed  # (only the control channel arms: plain runs skip its import

            svc = self.services
            taken = armed.take(self.session.armed, ctx, svc.selector)
            if taken is not None:
                return svc.expand(ctx, taken.steps, taken.rule)
        return self.pipeline.serve(ctx, MODERN)


def _discover_fault(req: jsonrpc.Request, fault: str) -> Plan:
    """``protocol.discover``: what the mock does to ``server/discover`` instead of answering it."""
    match fault:
        case "method-not-found":
            raise errors.MethodNotFound(f"Method not found: {req.method}", request_id=req.id)
        case "invalid-params":
            raise errors.InvalidParams("Invalid params", request_id=req.id)
        case "silent":
            return Plan(req.id, [Park()], req.method, "protocol.discover: silent")
    return Plan(req.id, [Exit(1)], req.method, "protocol.discover: exit")


def _no_time() -> float:
    """The clock of an engine built without one: tasks then move on by polls, input and state only."""
    return 0.0


def _claims_stateless(req: jsonrpc.Request) -> bool:
    """Does the request's ``_meta`` name the stateless revision (its envelope, not a handshake)?"""
    meta = req.params.get("_meta")
    return type(meta) is dict and meta.get(p.META_PROTOCOL_VERSION) == p.LATEST_VERSION


def _checked_meta(req: jsonrpc.Request, versions: list[str]) -> dict[str, Any]:
    """The request's ``_meta``, checked against what the revision requires of every request."""
    meta = req.params.get("_meta")
    if type(meta) is not dict:
        raise errors.InvalidParams(
            f"Invalid params: missing params._meta (it must carry {p.META_PROTOCOL_VERSION} "
            f"and {p.META_CLIENT_CAPABILITIES})",
            request_id=req.id,
        )
    version = meta.get(p.META_PROTOCOL_VERSION)
    if version is None:
        raise errors.InvalidParams(f"Invalid params: missing _meta[{p.META_PROTOCOL_VERSION!r}]", request_id=req.id)
    if type(version) is not str:
        raise errors.InvalidParams(f"Invalid params: _meta[{p.META_PROTOCOL_VERSION!r}] must be a string", request_id=req.id)
    caps = meta.get(p.META_CLIENT_CAPABILITIES)
    if caps is None:
        raise errors.InvalidParams(f"Invalid params: missing _meta[{p.META_CLIENT_CAPABILITIES!r}]", request_id=req.id)
    if type(caps) is not dict:
        raise errors.InvalidParams(f"Invalid params: _meta[{p.META_CLIENT_CAPABILITIES!r}] must be an object", request_id=req.id)
    if version not in versions:
        raise errors.UnsupportedVersion(
            "Unsupported protocol version",
            data={"supported": list(versions), "requested": version},
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
