"""The steps of the model's ``rounds`` part (``inputRequired``) as actions.

Imported by the step expander when a scenario's step of this part is first
expanded, so a scenario that uses none never imports it. Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockmcp.scenario.model.rounds import InputRequiredStep
from mockmcp.core.actions import Action
from mockmcp.core.context import Mode, RequestContext
from mockmcp.core.rounds import Rounds

if TYPE_CHECKING:
    from mockmcp.scenario.model.catalog import Step


class RoundSteps:
    """``inputRequired``: an MRTR round asks the client for input (``Rounds.ask_step``)."""

    __slots__ = ("rounds",)

    def __init__(self, rounds: Rounds) -> None:
        self.rounds = rounds

    def action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        match step:
            case InputRequiredStep():
                return self.rounds.ask_step(ctx, step.inputRequired)
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above
