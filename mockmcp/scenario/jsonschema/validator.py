"""The entry point: ``validator_for(schema).errors(arguments)``.

What it does, and what it refuses (the modules of this package say how):

- every assertion of the 2020-12 validation vocabulary, the applicators
  (``allOf``/``anyOf``/``oneOf``/``not``, ``if``/``then``/``else``,
  ``dependentSchemas``, ``prefixItems``/``items``/``contains``,
  ``properties``/``patternProperties``/``additionalProperties``/``propertyNames``),
  ``unevaluatedItems``/``unevaluatedProperties`` with annotations from passing
  subschemas only; ``format`` is an annotation (2020-12's default);
- ``$ref`` and ``$dynamicRef`` within the document only, never fetched
  (``resources``); with that, every required case of the official
  JSON-Schema-Test-Suite (draft2020-12 and draft7) that needs no remote document
  passes (tests/scenario/test_json_schema_suite.py);
- draft-07 (``$schema`` naming it); any other ``$schema`` is a ``SchemaError``
  naming the dialects supported (``vocabulary``);
- ``pattern``/``patternProperties`` through ``matching``'s bounded regexes, with
  ECMA-262's Unicode property escapes of general categories (``ecmaregex``);
- bounds on a schema's size and a call's cost (``vocabulary``): past one, the call
  is reported invalid with that reason, never an exception.

Why not the ``jsonschema`` package: it would be a fourth runtime dependency
(with ``referencing`` and ``rpds``) whose import costs several times this whole
package's on every spawn that calls such a tool (numbers in docs/performance.md);
what tool schemas use is the validation and applicator vocabularies above.

It is imported only when a tool with a schema beyond ``{type: object}`` is called
(or checked), so a spawn that does not need it never pays for it; the evaluator,
in turn, only when a call fails its compiled checks or a schema needs it.
"""

from __future__ import annotations

import marshal
from typing import TYPE_CHECKING, Any, Callable

from mockmcp.scenario.jsonschema.compiler import CheckCompiler
from mockmcp.scenario.jsonschema.resources import SchemaDocument
from mockmcp.scenario.jsonschema.vocabulary import (
    DIALECT_07,
    DIALECT_2020,
    MAX_DEPTH,
    MAX_REPORTED,
    MAX_STEPS,
    MAX_SUBSCHEMAS,
    SUPPORTED_DIALECTS,
    OverBudget,
    SchemaError,
)

if TYPE_CHECKING:
    from mockmcp.scenario.jsonschema.evaluator import Evaluator

__all__ = [
    "DIALECT_07", "DIALECT_2020", "MAX_CACHED", "MAX_DEPTH", "MAX_REPORTED", "MAX_STEPS", "MAX_SUBSCHEMAS",
    "SUPPORTED_DIALECTS", "SchemaError", "Validator", "validator_for", "validators_built",
]


class Validator:
    """A compiled schema: ``errors(instance)`` lists what the instance breaks.

    ``default_dialect`` is the dialect of a schema without ``$schema`` (2020-12, as
    the revision says of tool schemas; the JSON-Schema-Test-Suite's draft-07 folder
    is read with draft-07). ``compile_checks=False`` leaves every verdict to the
    evaluator: the compiled checks are only a faster way to the same answers, and
    the differential tests compare the two."""

    def __init__(self, schema: Any, default_dialect: str = DIALECT_2020, compile_checks: bool = True) -> None:
        if default_dialect not in SUPPORTED_DIALECTS:
            raise ValueError(f"default_dialect must be one of {SUPPORTED_DIALECTS}")
        self.document = SchemaDocument(schema, default_dialect)
        doc = self.document
        usable = compile_checks and not (doc.uses_unevaluated or doc.draft7 or doc.uses_dynamic_scope)
        self._passes: Callable[[Any], bool] | None = None
        self._evaluator: Evaluator | None = None
        if usable:
            compiler = CheckCompiler(doc)
            check = compiler.compile(schema)
            self._passes = _bounded(check, compiler.budget) if compiler.counts_refs else check
        else:
            self._evaluator = self._new_evaluator()

    @property
    def has_compiled_checks(self) -> bool:
        """Whether compiled checks decide valid instances (else the evaluator does: the
        schema uses unevaluated*, a dynamic $dynamicRef or draft-07, or it was asked to)."""
        return self._passes is not None

    def errors(self, instance: Any) -> list[str]:
        """Where ``instance`` breaks the schema, at most ``MAX_REPORTED`` places (``[]``: valid).

        A valid instance (the common case) is decided by the compiled checks alone;
        the evaluator runs only to explain a failure, or when the schema uses
        unevaluated* (which need annotations)."""
        passes = self._passes
        if passes is not None and passes(instance):
            return []
        evaluator = self._evaluator
        if evaluator is None:
            evaluator = self._evaluator = self._new_evaluator()
        return evaluator.errors(instance, known_invalid=passes is not None)

    def _new_evaluator(self) -> Evaluator:
        from mockmcp.scenario.jsonschema.evaluator import Evaluator  # only once a call fails, or the schema needs it

        return Evaluator(self.document)


def _bounded(check: Callable[[Any], bool], budget: list[int]) -> Callable[[Any], bool]:
    """``check`` with its ``$ref`` budget zeroed before each call; past the budget the
    instance does not pass here, and the evaluator, which meets the same bound, says where.
    (A schema without ``$ref`` cannot loop, so its check runs bare: one call per argument
    object instead of three.)"""

    def passes(instance: Any) -> bool:
        budget[0] = budget[1] = 0
        try:
            return check(instance)
        except OverBudget:
            return False

    return passes


# One validator per distinct schema value: tools often repeat one inputSchema, and building
# a validator costs far more than serialising the schema to find it again (10,000 tools
# with one schema built 10,000 validators, most of a cold load). The key is the schema's
# marshal form, version 2 (no back-references, so it depends on the value alone, not on
# which objects are shared): it tells 1 from 1.0 from true and "1" from 1 as a key, and
# keeps key order, which decides the order of reported errors. With the dialect that a
# schema without $schema gets, it is everything that shapes the compiled validator.
# A schema marshal cannot write (a value YAML made that JSON has not, a cycle) is compiled
# on its own, keyed by identity as before.
MAX_CACHED = 1024
_compiled: dict[bytes, Validator | SchemaError] = {}
_by_identity: dict[tuple[int, str], tuple[Any, Validator | SchemaError]] = {}
_built = 0


def validator_for(schema: Any, default_dialect: str = DIALECT_2020) -> Validator:
    """The compiled validator of ``schema``, shared by every equal schema (``SchemaError`` if unusable)."""
    try:
        key: bytes | None = default_dialect.encode() + b"\n" + marshal.dumps(schema, 2)
    except ValueError:  # not marshallable: a cycle, or a value that is not JSON
        key = None
    if key is not None:
        found = _compiled.get(key)
        if found is None:
            found = _build(schema, default_dialect)
            if len(_compiled) >= MAX_CACHED:
                del _compiled[next(iter(_compiled))]  # the oldest: its tools keep their own reference
            _compiled[key] = found
    else:
        entry = _by_identity.get((id(schema), default_dialect))
        if entry is None or entry[0] is not schema:
            if len(_by_identity) >= MAX_CACHED:
                del _by_identity[next(iter(_by_identity))]
            entry = _by_identity[(id(schema), default_dialect)] = (schema, _build(schema, default_dialect))
        found = entry[1]
    if type(found) is SchemaError:
        fresh = SchemaError(str(found))  # (a fresh one: re-raising one object would grow its traceback)
        fresh.path = found.path
        raise fresh
    assert isinstance(found, Validator)
    return found


def _build(schema: Any, default_dialect: str) -> Validator | SchemaError:
    """A new validator, or the reason the schema is refused (kept, so that 10,000 tools
    with one unusable schema are refused after one attempt)."""
    global _built
    _built += 1
    try:
        return Validator(schema, default_dialect)
    except SchemaError as exc:
        return exc


def validators_built() -> int:
    """How many schemas ``validator_for`` has compiled (or refused) in this process: each
    distinct schema value once, while it stays among the ``MAX_CACHED`` latest."""
    return _built
