"""The model classes of what a reply sends besides its answer, and when: progress,
log messages and emitted events, loops, random sleeps, and the subscription timers.

A part of the model (see ``base``'s docstring): imported only where one of these
classes is needed, since creating an attrs class is not free (see ``base``) and a warm
spawn creates the model first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from attrs import frozen

from mockmcp.scenario.model.base import JSON, Duration, Model

if TYPE_CHECKING:  # a step list holds any step (resolved by ``catalog``)
    from mockmcp.scenario.model.catalog import Step

__all__ = ["RandomDelay", "ProgressSpec", "LogSpec", "EmitSpec", "ProgressStep", "LogStep", "EmitStep", "LoopSpec", "LoopStep", "Timer"]


@frozen(repr=False, eq=False)
class RandomDelay(Model):
    """A random delay drawn uniformly from [min, max] (seeded by ``--seed``)."""

    min: Duration
    max: Duration


@frozen(repr=False, eq=False)
class ProgressSpec(Model):
    """A progress notification; ``progress``/``total`` may be templates (``"{{ index }}"``)."""

    progress: float | str
    total: float | str | None = None
    message: str | None = None
    # a non-increasing value on purpose (``mockmcp check`` then does not warn)
    deliberate: bool = False


@frozen(repr=False, eq=False)
class LogSpec(Model):
    level: Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
    data: JSON
    logger: str | None = None


@frozen(repr=False, eq=False)
class EmitSpec(Model):
    event: Literal["tools/list_changed", "prompts/list_changed", "resources/list_changed", "resources/updated"]
    uri: str | None = None


@frozen(repr=False, eq=False)
class ProgressStep(Model):
    KEY = "progress"

    progress: ProgressSpec


@frozen(repr=False, eq=False)
class LogStep(Model):
    KEY = "log"

    log: LogSpec


@frozen(repr=False, eq=False)
class EmitStep(Model):
    KEY = "emit"

    emit: EmitSpec


@frozen(repr=False, eq=False)
class LoopSpec(Model):
    """Run ``steps`` ``times`` times (a number or a template such as
    ``"{{ default(arguments.steps, 3) }}"``); ``{{ index }}`` counts from 1."""

    times: int | str
    steps: list[Step]


@frozen(repr=False, eq=False)
class LoopStep(Model):
    """Repeat non-final steps (progress, log, sleep, emit...) a number of times."""

    KEY = "loop"

    loop: LoopSpec


@frozen(repr=False, eq=False)
class Timer(Model):
    """A timed event on every open subscription stream.

    ``count`` events, the first ``after`` the acknowledgement, then one every
    ``every``; each goes to the stream only if it asked for that kind.
    """

    emit: EmitSpec
    after: Duration = Duration(0.0)
    every: Duration | None = None
    count: int = 1

