"""The model classes of ``input_required`` results (multi round-trip requests).

A part of the model (see ``base``'s docstring): imported only where one of these
classes is needed, since creating an attrs class is not free (see ``base``) and a warm
spawn creates the model first.
"""

from __future__ import annotations

import attrs
from attrs import frozen

from mockmcp.scenario.model.base import JSON, Model

__all__ = ["InputRequiredSpec", "InputRequiredStep"]


@frozen(repr=False, eq=False)
class InputRequiredSpec(Model):
    """An ``input_required`` result: input requests keyed by name, and/or state.

    ``requestState: true`` (default) lets mockmcp issue its own HMAC-protected
    state (carrying the round); a string is appended to it as scenario data;
    ``false`` sends none (then at least one input request is needed).
    """

    inputRequests: dict[str, JSON] = attrs.Factory(dict)
    requestState: bool | str = True


@frozen(repr=False, eq=False)
class InputRequiredStep(Model):
    KEY = "inputRequired"
    FINAL = True

    inputRequired: InputRequiredSpec

