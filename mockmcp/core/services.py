"""What a method handler may use: the narrow interface between handlers and the core.

Handlers (``methods``, and ``legacy`` around them) see the scenario's
primitives, the envelope, rule selection, step expansion, MRTR rounds and the
session through this one object, never the engine. ``answer`` is the common
path of every scripted answer: ask again for missing inputs, else the first
matching rule's steps, else ``NoRuleMatched``. Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

from mockmcp.scenario.model import base as model
from mockmcp.core.actions import Plan, answered
from mockmcp.core.context import Mode, RequestContext
from mockmcp.scenario.definitions import iter_rules, validates_input
from mockmcp.scenario.uritemplates import compile_uri_template
from mockmcp.core.envelope import NO_HINTS, CacheHints, Envelope
from mockmcp.core.rounds import Rounds
from mockmcp.core.selection import Selector
from mockmcp.core.session import Session
from mockmcp.core.steps import StepExpander

if TYPE_CHECKING:
    from mockmcp.core.effects import Effects
    from mockmcp.core.tasks import TaskTable
    from mockmcp.scenario.model.catalog import Step

_Item = TypeVar("_Item", model.Tool, model.Prompt, model.Resource, model.ResourceTemplate)


class Services:
    """Everything a handler may use, each handed in at construction by the engine."""

    def __init__(
        self,
        scenario: model.Scenario,
        capabilities: dict[str, Any],
        envelope: Envelope,
        session: Session,
        selector: Selector,
        steps: StepExpander,
        rounds: Rounds,
        *,
        tasks: TaskTable,
        effects: Effects | None,
        overrides: Mapping[str, list[model.Rule]],
        track_unknown: bool = False,
    ) -> None:
        self.scenario = scenario
        self._validators: dict[int, tuple[model.Tool, Callable[[Any], list[str]] | None]] = {}
        self.effects = effects  # templates' uuid()/now()/counter(): the shell's generator and clock
        self.protocol = scenario.protocol
        self.capabilities = capabilities
        self.envelope = envelope
        self.session = session
        self.selector = selector
        self.steps = steps
        self.rounds = rounds
        self._index(scenario)
        self.tasks = tasks  # the Tasks extension's table (empty unless a tool answers with a task)
        # Record requests for undefined names, with the closest defined name (the verifier's wish).
        self.track_unknown = track_unknown
        # id(item) -> (item, definition): the entry holds the item, so the id stays its own
        self._definitions: dict[int, tuple[object, dict[str, Any]]] = {}
        self._rule_labels: dict[int, tuple[model.Rule, str]] | None = None
        # protocol.unmatched: fail: a request no rule answers gets the near miss, not a built-in answer
        self.fail_unmatched = scenario.protocol.unmatched == "fail"
        self.overrides = overrides  # the scenario's methods: rules, by method

    def _index(self, scenario: model.Scenario) -> None:
        self.tools = {t.name: t for t in scenario.tools}
        self.prompts = {pr.name: pr for pr in scenario.prompts}
        self.resources = {r.uri: r for r in scenario.resources}
        self.templates = [(compile_uri_template(t.uriTemplate), t) for t in scenario.resourceTemplates]

    def replace_primitives(self, scenario: model.Scenario, capabilities: dict[str, Any]) -> None:
        """Answer from ``scenario``'s tools, prompts, resources and templates from now on."""
        self.scenario = scenario
        self.capabilities = capabilities
        self._index(scenario)
        self._rule_labels = None  # rule paths moved

    # ------------------------------------------------------------ scripted answers

    def answer(self, ctx: RequestContext, rules: list[model.Rule], what: str) -> Plan:
        """The answer of the first rule matching (``what`` names the primitive, for errors)."""
        if ctx.reask is not None:
            return self.rounds.reask(ctx, ctx.reask)
        chosen = self.selector.select(rules, ctx)
        if chosen is None:
            raise self.selector.no_match(rules, ctx, what)
        rule = chosen.rule
        return self.steps.expand(ctx, chosen.steps, rule.name if rule.name is not None else self.rule_label(rule))

    def expand(self, ctx: RequestContext, steps: list[Step], rule: model.Rule | None, mode: Mode = Mode.REQUEST) -> Plan:
        return self.steps.expand(ctx, steps, None if rule is None else self.rule_label(rule), mode)

    def final(self, ctx: RequestContext, result: dict[str, Any], hints: CacheHints = NO_HINTS) -> Plan:
        """A plan that answers at once with a complete result."""
        env = self.envelope
        return answered(ctx.id, env.final(ctx.id, env.complete(ctx.method, result, hints)), ctx.method, None)

    # ------------------------------------------------------------ primitives

    def visible(self, item: model.Tool | model.Prompt | model.Resource | model.ResourceTemplate) -> bool:
        """Is ``item`` offered in the current named state?"""
        return item.states is None or self.session.state in item.states

    def definitions(self, items: Sequence[_Item], make: Callable[[_Item], dict[str, Any]]) -> list[dict[str, Any]]:
        """The wire definitions of the visible ``items`` (each built once)."""
        out = []
        cache = self._definitions
        for item in items:
            if self.visible(item):
                entry = cache.get(id(item))
                if entry is None:
                    entry = cache[id(item)] = (item, make(item))
                out.append(entry[1])
        return out

    def input_validator(self, tool: model.Tool) -> Callable[[Any], list[str]] | None:
        """What checks a call's arguments against the tool's inputSchema (``None``: nothing to
        check), decided and compiled once per tool: a call pays one lookup and the checks."""
        entry = self._validators.get(id(tool))
        if entry is None:
            check = None
            if validates_input(tool, self.protocol.validateInput):
                from mockmcp.scenario.jsonschema.validator import validator_for  # only scenarios whose schemas need it import it

                check = validator_for(tool.inputSchema).errors
            entry = self._validators[id(tool)] = (tool, check)
        return entry[1]

    def note_unknown(self, ctx: RequestContext, kind: str, name: str, known: list[str]) -> None:
        """Record a request for something the scenario does not define, with the closest name it does.

        Only when the verifier listens (``track_unknown``): plain runs skip the name search.
        """
        if not self.track_unknown:
            return
        import difflib  # (only errors need it: spawns skip its import)

        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        miss = {"rule": close[0], "reason": f"the scenario defines no {kind} {name!r}; did you mean {close[0]!r}?"} if close else None
        self.session.unmatched.append({"id": ctx.id, "method": ctx.method, "what": f"{kind} {name!r}", "undefined": True, "nearMiss": miss})

    def rule_label(self, rule: model.Rule) -> str:
        """A rule's name, or where it is in the scenario (``$.tools[0].replies[1]``) for the journal."""
        if rule.name is not None:
            return rule.name
        labels = self._rule_labels
        if labels is None:
            from mockmcp.scenario.problems import format_path

            labels = self._rule_labels = {id(r): (r, format_path(path)) for path, _, r in iter_rules(self.scenario)}
        entry = labels.get(id(rule))
        return "?" if entry is None else entry[1]
