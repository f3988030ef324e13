"""The method pipeline: a request past its era's checks, answered by a rule or a handler.

One implementation of the stages every era runs in the same order: a
``methods:`` override may answer; the era's own methods (the legacy
handshake's ``ping``, ``logging/setLevel``, ...); a method no handler knows
is a no-match (the near miss of the overrides, under ``protocol.unmatched:
fail``) or ``-32601``; the server capability behind the method is checked;
the method's handler answers. What differs between eras is data handed in as
an ``Era``, so the modern engine and the legacy era share this one path.
Notifications meet the overrides here too (``notification``). Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.core.actions import Plan
from mockmcp.core.context import Mode, RequestContext
from mockmcp.core.methods import CAPABILITY_FOR, Handler
from mockmcp.core.services import Services

if TYPE_CHECKING:
    from mockmcp.scenario.model import base as model


class Era:
    """What an era changes in the pipeline (the modern era: ``MODERN``, nothing).

    ``own`` answers the era's own methods (``None``: not one of them);
    ``undefined`` are methods a handler knows that the era does not define;
    ``refused`` maps a method the era refuses to the reason said with ``-32601``;
    ``finish`` rewrites every plan the pipeline makes (the legacy era strips
    modern fields); ``notes_unknown``: an unknown method is noted for the
    verifier; ``names_capability``: a missing capability is named in the error.
    """

    __slots__ = ("own", "undefined", "refused", "finish", "notes_unknown", "names_capability")

    def __init__(
        self,
        *,
        own: Callable[[RequestContext], Plan | None] | None = None,
        undefined: frozenset[str] = frozenset(),
        refused: Mapping[str, str] | None = None,
        finish: Callable[[Plan], Plan] | None = None,
        notes_unknown: bool = True,
        names_capability: bool = True,
    ) -> None:
        self.own = own
        self.undefined = undefined
        self.refused: Mapping[str, str] = refused or {}
        self.finish = finish
        self.notes_unknown = notes_unknown
        self.names_capability = names_capability


MODERN = Era()


class MethodPipeline:
    """override -> the era's own methods -> handler lookup (or no match) -> capability gate -> handler."""

    __slots__ = ("svc", "handlers", "overrides")

    def __init__(self, svc: Services, handlers: Mapping[str, Handler], overrides: Mapping[str, list[model.Rule]]) -> None:
        self.svc = svc
        self.handlers = handlers
        self.overrides = overrides  # the scenario's methods: rules, by method

    def serve(self, ctx: RequestContext, era: Era) -> Plan:
        """The answer to a request whose envelope its era accepted."""
        svc = self.svc
        method = ctx.method
        finish = era.finish
        overrides = self.overrides.get(method)
        if overrides:
            chosen = svc.selector.select(overrides, ctx)
            if chosen is not None:
                plan = svc.expand(ctx, chosen.steps, chosen.rule)
                return plan if finish is None else finish(plan)
        if era.own is not None:
            own = era.own(ctx)
            if own is not None:
                return own
        handler = self.handlers.get(method)
        if handler is None or method in era.undefined:
            if overrides:
                miss = svc.selector.no_match(overrides, ctx, f"method {method!r}")
                if svc.fail_unmatched:
                    raise miss  # the method was scripted (recorded), just not this request
            elif era.notes_unknown and method not in p.REMOVED_METHODS:
                svc.note_unknown(ctx, "method", method, list(self.handlers) + list(self.overrides))
            raise errors.MethodNotFound(f"Method not found: {method}", request_id=ctx.id)
        refusal = era.refused.get(method) if era.refused else None
        if refusal is not None:
            raise errors.MethodNotFound(f"Method not found: {method} ({refusal})", request_id=ctx.id)
        cap = CAPABILITY_FOR.get(method)
        if cap is not None and cap not in svc.capabilities:
            said = f" (this server does not offer {cap})" if era.names_capability else ""
            raise errors.MethodNotFound(f"Method not found: {method}{said}", request_id=ctx.id)
        plan = handler(svc, ctx)
        return plan if finish is None else finish(plan)

    def notification(self, note: jsonrpc.Notification) -> Plan | None:
        """A ``methods:`` rule for a notification: the deliberate "response to a notification".

        The request id in templates and in result/error steps is ``null`` (a
        notification has none); ``raw`` can write any id. A matching rule
        replaces the built-in handling (for ``notifications/cancelled`` too).
        ``None``: no rule for it, or none matched.
        """
        rules = self.overrides.get(note.method)
        if not rules:
            return None
        svc = self.svc
        meta = note.params.get("_meta")
        req = jsonrpc.Request(None, note.method, note.params, note.message)
        ctx = RequestContext(req, meta if type(meta) is dict else {}, svc.session.state, svc.effects)
        chosen = svc.selector.select(rules, ctx)
        if chosen is None:
            return None
        try:
            plan = svc.expand(ctx, chosen.steps, chosen.rule, Mode.NOTIFICATION)
        except (templates.TemplateError, errors.ClientError):
            return None  # nothing can be answered to a notification, not even this error
        plan.has_id = False
        return plan
