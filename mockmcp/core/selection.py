"""Rule selection: which scripted rule answers a request, and why none did.

A rule answers when its ``when`` matches the request context and its
targeting lets this occurrence through (``nth``, ``every``, ``first``,
``after``, ``probability``); the counters live in the session, the random
numbers come from the generator the shell seeded. A rule with a ``sequence``
answers with the next entry of it. Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol


from mockmcp.wire import errors
from mockmcp.scenario.model import base as model
from mockmcp.core.context import RequestContext
from mockmcp.scenario.matching import matches, near_miss
from mockmcp.core.session import Session

if TYPE_CHECKING:
    from mockmcp.scenario.model.catalog import Step

# One shared empty step list, for rules without steps.
NO_STEPS: list[Step] = []


class Random(Protocol):
    """What selection and steps need of a random generator (``random.Random`` fits)."""

    def random(self) -> float: ...

    def uniform(self, a: float, b: float) -> float: ...

    def getrandbits(self, k: int, /) -> int: ...  # uuid() in templates (effects.py)


class Chosen:
    """The rule that answers and the steps it answers with (its sequence's entry, if any).

    A plain slotted class: one is made per scripted answer, and a frozen attrs
    init costs several times a plain one. Treat as immutable.
    """

    __slots__ = ("rule", "steps")

    def __init__(self, rule: model.Rule, steps: list[Step]) -> None:
        self.rule = rule
        self.steps = steps


class _Gate:
    """What selection needs of one rule, read from its ``when`` once: does it look at the
    request, does it target occurrences, and its answer when that is always the same."""

    __slots__ = ("rule", "conditional", "targeted", "fixed")

    def __init__(self, rule: model.Rule) -> None:
        when = rule.when
        self.rule = rule  # (held: the gate is found by the rule's id)
        # A `when` with no condition on the request matches all of them.
        self.conditional = not (
            when.arguments is None
            and when.round is None
            and when.state is None
            and when.inputResponses is None
            and when.vars is None
            and when.params is None
            and when.meta is None
        )
        self.targeted = not (
            when.nth is None and when.every is None and when.first is None and when.after is None and when.probability is None
        )
        self.fixed = Chosen(rule, rule.steps or NO_STEPS) if rule.sequence is None else None


class Selector:
    __slots__ = ("session", "rng", "_gates")

    def __init__(self, session: Session, rng: Random) -> None:
        self.session = session
        self.rng = rng
        self._gates: dict[int, _Gate] = {}  # by id(rule); each gate holds its rule

    def select(self, rules: list[model.Rule], ctx: RequestContext) -> Chosen | None:
        """The first rule that answers this request (counting it), or ``None``."""
        gates = self._gates
        for rule in rules:
            gate = gates.get(id(rule))
            if gate is None:
                gate = gates[id(rule)] = _Gate(rule)
            if gate.conditional and not matches(rule.when, ctx.scope()):
                continue
            count = self.session.count_match(rule)
            if gate.targeted and not self._lets_through(rule.when, count):
                continue
            if gate.fixed is not None:
                return gate.fixed
            sequence = rule.sequence
            assert sequence is not None  # (a gate without a fixed answer is a sequence's)
            used = self.session.take_sequence(rule)
            n = len(sequence)
            return Chosen(rule, sequence[used % n if rule.cycle else min(used, n - 1)])
        return None

    def _lets_through(self, when: model.Match, count: int) -> bool:
        """Does the rule's targeting let its ``count``-th match answer?"""
        if when.nth is not None and count != when.nth:
            return False
        if when.every is not None and count % when.every:
            return False
        if when.first is not None and count > when.first:
            return False
        if when.after is not None and count <= when.after:
            return False
        return when.probability is None or self.rng.random() < when.probability

    def require(self, rules: list[model.Rule], ctx: RequestContext, what: str) -> Chosen:
        """The rule that answers, or ``NoRuleMatched`` with the near miss (recorded for the verifier)."""
        chosen = self.select(rules, ctx)
        if chosen is None:
            raise self.no_match(rules, ctx, what)
        return chosen

    def no_match(self, rules: list[model.Rule], ctx: RequestContext, what: str) -> errors.NoRuleMatched:
        miss = near_miss(rules, ctx.scope())
        if miss is None:  # no rule at all (protocol.unmatched: fail): say so, a cassette recorded none
            miss = {"rule": "(none)", "reason": f"{what} has no rules: no such request was scripted or recorded"}
        record: dict[str, Any] = {"id": ctx.id, "method": ctx.method, "what": what, "nearMiss": miss}
        self.session.unmatched.append(record)
        return errors.NoRuleMatched(what, miss, request_id=ctx.id)
