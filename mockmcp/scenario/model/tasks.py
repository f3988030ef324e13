"""The model classes of the Tasks extension's ``task:`` step.

A part of the model (see ``base``'s docstring): imported only where one of these
classes is needed, since creating an attrs class is not free (see ``base``) and a warm
spawn creates the model first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs
from attrs import frozen

from mockmcp.scenario.model.base import JSON, Duration, Model

if TYPE_CHECKING:  # a step list holds any step (resolved by ``catalog``)
    from mockmcp.scenario.model.catalog import Step

__all__ = ["TaskPhase", "TaskFaults", "TaskSpec", "TaskStep"]


@frozen(repr=False, eq=False)
class TaskPhase(Model):
    """One stretch of a task's life, ended by time (``after``), by polls
    (``polls``: this many ``tasks/get`` answered in it), by named state
    (``state``), or, for ``input_required``, by every input request answered.
    A ``working`` phase with none of them lasts until the task is cancelled."""

    status: Literal["working", "input_required"] = "working"
    statusMessage: str | None = None
    after: Duration | None = None
    polls: int | None = None
    state: str | list[str] | None = None
    inputRequests: dict[str, JSON] | None = None
    pollIntervalMs: int | None = None


@frozen(repr=False, eq=False)
class TaskFaults(Model):
    """Deliberate violations of the Tasks extension (see docs/faults.md)."""

    vanishAfterPolls: int | None = None  # tasks/get answers "not found" once this many polls were answered
    statusBackwards: bool = False  # after the first phase change, one poll reports the previous status again
    terminalChanges: bool = False  # a terminal task reports a different status on the next poll
    hangGetAfterPolls: int | None = None  # tasks/get never answers once this many polls were answered
    reuseInputKey: bool = False  # every input_required phase asks under the first phase's first key
    ignoreCapability: bool = False  # return the task even to a client without the extension capability
    anyMethod: bool = False  # allow this task step on a request the extension does not augment (prompts/get...)


@frozen(repr=False, eq=False)
class TaskSpec(Model):
    """Answer with a task handle (``resultType: task``) whose life is scripted.

    ``phases`` run in order; after the last one the task ends with ``outcome``
    (one text/result step: ``completed``; one error step: ``failed``; empty:
    ``completed`` with no content). ``cancel: honour`` makes ``tasks/cancel``
    end the task as ``cancelled``; ``ignore`` only acknowledges it.
    ``withoutCapability`` says what a client without the extension gets: the
    outcome at once (``answer``) or -32021 (``error``).
    """

    phases: list[TaskPhase] = attrs.Factory(list)
    outcome: list[Step] = attrs.Factory(list)
    ttlMs: int | None = 3_600_000
    pollIntervalMs: int = 1000
    statusMessage: str | None = None
    cancel: Literal["honour", "ignore"] = "honour"
    withoutCapability: Literal["error", "answer"] = "error"
    faults: TaskFaults | None = None


@frozen(repr=False, eq=False)
class TaskStep(Model):
    """Answer ``tools/call`` with a task the client polls (the Tasks extension)."""

    KEY = "task"
    FINAL = True

    task: TaskSpec

