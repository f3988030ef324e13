"""The union of every step class and the step tables, which need every part of the model.

Imported by what needs them (the loaders, the checks, the schema), never by a warm
spawn: it imports every part of the model. Importing it also resolves the annotations
of every model class (``attrs.resolve_types``): those that name a class of another
part (``Rule.steps: list[Step]``) cannot be resolved in their own module without
an import cycle, so the code that reads field types (cattrs, ``quickload``,
``schema``) finds them resolved here, against ``NAMESPACE``.
"""

from __future__ import annotations

from typing import Union

import attrs

from mockmcp.scenario.model import auth as model_auth
from mockmcp.scenario.model import base as model
from mockmcp.scenario.model import faults as model_faults
from mockmcp.scenario.model import notify as model_notify
from mockmcp.scenario.model import options as model_options
from mockmcp.scenario.model import rounds as model_rounds
from mockmcp.scenario.model import tasks as model_tasks
from mockmcp.scenario.model.base import ErrorStep, ResultStep, SleepStep, TextStep
from mockmcp.scenario.model.faults import (
    CloseStdoutStep,
    DribbleStep,
    EndSubscriptionStep,
    ExitStep,
    ForwardStep,
    HangStep,
    HttpStep,
    HugeStep,
    RawBytesStep,
    RawStep,
    RequestStep,
    SetStateStep,
    StderrStep,
    StopReadingStep,
)
from mockmcp.scenario.model.notify import EmitStep, LogStep, LoopStep, ProgressStep
from mockmcp.scenario.model.rounds import InputRequiredStep
from mockmcp.scenario.model.tasks import TaskStep

__all__ = ["Step", "STEP_TYPES", "STEP_KEYS", "TERMINAL_STEPS", "PARTS", "NAMESPACE", "CLASSES"]

Step = Union[
    ResultStep,
    TextStep,
    ErrorStep,
    InputRequiredStep,
    SleepStep,
    ProgressStep,
    LogStep,
    EmitStep,
    SetStateStep,
    LoopStep,
    EndSubscriptionStep,
    RawStep,
    RawBytesStep,
    HangStep,
    ExitStep,
    DribbleStep,
    StderrStep,
    StopReadingStep,
    CloseStdoutStep,
    HugeStep,
    TaskStep,
    ForwardStep,
    RequestStep,
    HttpStep,
]
STEP_TYPES: tuple[type, ...] = Step.__args__  # type: ignore[attr-defined]
# The key that identifies each step type (its first field).
STEP_KEYS: dict[str, type] = {attrs.fields(t)[0].name: t for t in STEP_TYPES}
TERMINAL_STEPS = (ResultStep, TextStep, ErrorStep, InputRequiredStep, HangStep, ExitStep, HugeStep, TaskStep, ForwardStep)

# The modules that hold the model: its core, then its parts.
PARTS = (model, model_rounds, model_notify, model_tasks, model_options, model_faults, model_auth)
# Every name of the model, as the annotations of its classes use them.
NAMESPACE: dict[str, object] = {"Step": Step}
for _module in PARTS:
    NAMESPACE.update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
# Every class of the model, its annotations resolved.
CLASSES: tuple[type, ...] = tuple(
    v for m in PARTS for v in vars(m).values() if isinstance(v, type) and attrs.has(v) and v.__module__ == m.__name__
)
for _cls in CLASSES:
    attrs.resolve_types(_cls, NAMESPACE)
