"""One validation by the evaluator: its report, its budget, its dynamic scope; and the
seam through which the keywords of arrays and objects evaluate their subschemas.

An evaluation's outcome (``Annotations | None``) is ``None`` if the instance fails,
else the annotations the ``unevaluated*`` keywords need: the property names and the
item indices that passing subschemas evaluated.
"""

from __future__ import annotations

from typing import Any, Protocol

from mockmcp.scenario.jsonschema.vocabulary import MAX_REPORTED, at

Annotations = tuple[set[str], set[int]]
EMPTY: Annotations = (set(), set())


class Run:
    """One validation: the errors found so far (``None``: not reporting), the evaluation budget."""

    __slots__ = ("errors", "steps", "depth", "scope")

    def __init__(self, collect: bool, scope: list[str] | None) -> None:
        self.errors: list[str] | None = [] if collect else None
        self.steps = 0
        self.depth = 0
        # The schema resources entered so far, outermost first (the dynamic scope a
        # $dynamicRef searches); None when the schema has no such reference.
        self.scope = scope

    def fail(self, path: tuple[Any, ...], message: str) -> None:
        """Report that the instance at ``path`` breaks the schema (the first ``MAX_REPORTED``)."""
        if self.errors is not None and len(self.errors) < MAX_REPORTED:
            self.errors.append(f"{at(path)}: {message}")


class Evaluates(Protocol):
    """What the keywords of one instance type need from the evaluator."""

    @property
    def draft7(self) -> bool: ...

    @property
    def patterns(self) -> dict[str, str]: ...

    def eval(self, schema: Any, v: Any, path: tuple[Any, ...], run: Run) -> Annotations | None:
        """Evaluate ``schema`` on ``v``, reporting what fails."""

    def quiet(self, schema: Any, v: Any, path: tuple[Any, ...], run: Run) -> Annotations | None:
        """Evaluate without reporting (a branch of anyOf, oneOf, not, if, contains)."""

    def sub(self, schema: Any, v: Any, path: tuple[Any, ...], run: Run, why: str) -> Annotations | None:
        """Evaluate a subschema that a ``false`` may stand for ("not allowed here")."""
