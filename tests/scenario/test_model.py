"""The model's shared ``__repr__``/``__eq__``/``__hash__`` against what attrs generates.

``model.Model`` replaces the three methods attrs would compile for each frozen
class (import time on every spawn); over every model class and generated field
values (NaN, nested model objects, a cycle) it must give attrs' text and answers.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockmcp.scenario.model import base as model
from mockmcp.scenario.model import catalog as model_steps

CLASSES = sorted(model_steps.CLASSES, key=lambda c: c.__name__)  # every class of the model and its parts
NAN = math.nan  # one object: equal to itself by identity only (tuples compare it so, attrs' eq does not)

values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, NAN, "a", "", [1], {"k": 1}]),
    st.builds(model.Duration, st.sampled_from([0.0, 1.0, NAN])),
)


def twin(cls: type) -> type:
    """The same class as attrs builds it by default (its own generated repr, eq and hash)."""
    fields = {a.name: attrs.field(default=a.default) for a in attrs.fields(cls)}
    return attrs.make_class(cls.__name__, fields, frozen=True)


TWINS = {cls: twin(cls) for cls in CLASSES}


def test_every_model_class_uses_the_shared_methods():
    assert len(CLASSES) > 40
    for cls in CLASSES:
        assert cls.__repr__ is model.Model.__repr__ and cls.__eq__ is model.Model.__eq__, cls
        assert cls.__hash__ is model.Model.__hash__, cls


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_repr_eq_and_hash_are_attrs_own(cls: type, data: Any) -> None:
    names = [a.name for a in attrs.fields(cls)]
    one = [data.draw(values) for _ in names]
    other = [data.draw(st.sampled_from([v, data.draw(values)])) for v in one]
    mine, theirs = (cls(*one), cls(*other)), (TWINS[cls](*one), TWINS[cls](*other))
    assert [repr(x) for x in mine] == [repr(x) for x in theirs]
    assert (mine[0] == mine[1], mine[0] != mine[1]) == (theirs[0] == theirs[1], theirs[0] != theirs[1])
    assert (mine[0] == one) is (theirs[0] == one) is False
    hashable = all(isinstance(v, (type(None), bool, int, float, str, model.Duration)) for v in one)
    for x in (mine[0], theirs[0]):  # hashable exactly when attrs' is (a list or dict field is not)
        if hashable:
            hash(x)
        else:
            with pytest.raises(TypeError):
                hash(x)
    if hashable and mine[0] == mine[1]:
        assert hash(mine[0]) == hash(mine[1])


def test_a_cycle_prints_as_attrs_prints_it():
    arguments: dict[str, Any] = {}
    mine, theirs = model.Match(arguments=arguments), TWINS[model.Match](arguments=arguments)
    arguments["self"] = mine
    text = repr(mine)
    arguments["self"] = theirs
    assert text == repr(theirs) and "..." in text
