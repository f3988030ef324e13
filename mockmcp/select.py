"""Rule selection: which scripted rule answers a request, and why none did.

A rule answers when its ``when`` matches the request context and its
targeting lets this occurrence through (``nth``, ``every``, ``first``,
``after``, ``probability``); the counters live in the session, the random
numbers come from the generator the shell seeded. A rule with a ``sequence``
answers with the next entry of it. Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Protocol


from . import errors, model
from .context import RequestContext
from .matching import matches, near_miss
from .session import Session

# One shared empty step list, for rules without steps.
NO_STEPS: list[model.Step] = []


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

    def __init__(self, rule: model.Rule, steps: list[model.Step]) -> None:
        self.rule = rule
        self.steps = steps


class Selector:
    __slots__ = ("session", "rng")

    def __init__(self, session: Session, rng: Random) -> None:
        self.session = session
        self.rng = rng

    def select(self, rules: list[model.Rule], ctx: RequestContext) -> Chosen | None:
        """The first rule that answers this request (counting it), or ``None``."""
        for rule in rules:
            when = rule.when
            conditional = not (  # a `when` with no condition on the request matches all of them
                when.arguments is None
                and when.round is None
                and when.state is None
                and when.inputResponses is None
                and when.vars is None
                and when.params is None
                and when.meta is None
            )
            if conditional and not matches(when, ctx.scope()):
                continue
            count = self.session.count_match(rule)
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
                used = self.session.take_sequence(rule)
                n = len(rule.sequence)
                return Chosen(rule, rule.sequence[used % n if rule.cycle else min(used, n - 1)])
            return Chosen(rule, rule.steps or NO_STEPS)
        return None

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
