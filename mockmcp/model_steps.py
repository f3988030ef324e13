"""The union of every step class and the step tables, which need every part of the model.

Imported by what needs them (the loaders, the checks, the schema; ``model.Step`` and
the tables name it lazily), never by a warm spawn: it imports every part of the model.
"""

from __future__ import annotations

from typing import Union

import attrs

from . import model, model_options  # noqa: F401  (model_options: no step, but a part; all are defined once this is)
from .model import ErrorStep, ResultStep, SleepStep, TextStep
from .model_faults import (
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
from .model_notify import EmitStep, LogStep, LoopStep, ProgressStep
from .model_rounds import InputRequiredStep
from .model_tasks import TaskStep

__all__ = ["Step", "STEP_TYPES", "STEP_KEYS", "TERMINAL_STEPS"]

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

model.adopt(globals())
