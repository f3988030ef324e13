"""The vocabulary: what the keywords are and what they mean for a value.

What the rest of the package agrees on: which ``$schema`` values are understood
(2020-12, the default, and draft-07; any other is a ``SchemaError`` naming those),
where a schema object keeps its subschemas, how far a schema and a validation may
go (``MAX_SUBSCHEMAS`` per schema, ``MAX_DEPTH`` nested evaluations, ``MAX_STEPS``
evaluations per call; past one, the call is reported invalid, never an exception),
which keyword values are refused up front so that no validation raises instead of
answering, and how an instance is judged, the same way by the compiled checks and
by the evaluator: an integer-valued float is an integer, ``1 == 1.0`` but
``true != 1``, and ``multipleOf`` is exact decimal arithmetic rather than binary
floating point.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator

MAX_SUBSCHEMAS = 10_000
MAX_DEPTH = 128
MAX_STEPS = 200_000
MAX_REPORTED = 8

DIALECT_2020 = "https://json-schema.org/draft/2020-12/schema"
DIALECT_07 = "http://json-schema.org/draft-07/schema"
SUPPORTED_DIALECTS = (DIALECT_2020, DIALECT_07)


class SchemaError(ValueError):
    """The schema cannot be used to validate (unknown dialect, unresolved ``$ref``, a bad keyword value).

    ``path``: where in the schema the subschema at fault is (``("properties", "z")``), when the
    walk that found it knows (``check`` adds it to the schema's own place, for the file's line)."""

    path: tuple[Any, ...] = ()


class OverBudget(Exception):
    """Raised inside a validation when a bound is reached (caught by whoever started the
    validation, which reports the call invalid with this reason)."""


SCHEMA_KEYS = ("items", "contains", "additionalProperties", "propertyNames", "not", "if", "then", "else",
               "unevaluatedItems", "unevaluatedProperties", "additionalItems")
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")

TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")


def type_ok(name: str, v: Any) -> bool:
    """Whether ``v`` is of the JSON Schema type ``name`` (one of ``TYPES``)."""
    t = type(v)
    if name == "string":
        return t is str
    if name == "integer":
        return t is int or (t is float and v.is_integer())
    if name == "number":
        return t is int or t is float
    if name == "object":
        return t is dict
    if name == "array":
        return t is list
    if name == "boolean":
        return t is bool
    return v is None  # "null"


def canon(v: Any) -> Any:
    """A hashable form in which JSON-equal values are equal (1 == 1.0, true != 1)."""
    t = type(v)
    if t is bool:
        return ("b", v)
    if t is float:
        return ("n", int(v)) if v.is_integer() else ("n", v)
    if t is int:
        return ("n", v)
    if t is dict:
        return ("o", frozenset((k, canon(x)) for k, x in v.items()))
    if t is list:
        return ("a", tuple(canon(x) for x in v))
    return (t.__name__, v)


def clip(v: Any) -> str:
    """``v`` as a report shows it: its repr, cut to 40 characters."""
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def at(path: tuple[Any, ...]) -> str:
    """The place ``path`` names in the arguments, as a report shows it (``$.a[0]``)."""
    out = "$"
    for part in path:
        if type(part) is int:
            out += f"[{part}]"
        elif type(part) is str and part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def multiple(v: int | float, m: int | float) -> bool:
    """Whether ``v`` is a multiple of ``m`` (exactly, in decimal)."""
    if type(v) is int and type(m) is int:
        return v % m == 0
    if isinstance(v, float) and not math.isfinite(v):
        return False
    from fractions import Fraction  # exact decimal arithmetic, only for non-integer multipleOf (4 ms to import)

    try:
        return (Fraction(str(v)) / Fraction(str(m))).denominator == 1
    except (ValueError, OverflowError, ZeroDivisionError):
        return False


# Is ``v`` within the bound ``b`` of minimum, maximum, exclusiveMinimum, exclusiveMaximum?
def within_minimum(v: Any, b: Any) -> bool:
    return bool(v >= b)


def within_maximum(v: Any, b: Any) -> bool:
    return bool(v <= b)


def within_exclusive_minimum(v: Any, b: Any) -> bool:
    return bool(v > b)


def within_exclusive_maximum(v: Any, b: Any) -> bool:
    return bool(v < b)


# Each numeric bound keyword, its test, and what a report says of a number outside it.
NUMBER_BOUNDS: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
    ("minimum", within_minimum, "less than"),
    ("maximum", within_maximum, "greater than"),
    ("exclusiveMinimum", within_exclusive_minimum, "less than or equal to"),
    ("exclusiveMaximum", within_exclusive_maximum, "greater than or equal to"),
)


def dialect_of(schema: Any, default: str = DIALECT_2020) -> str:
    """The dialect ``schema`` is written in (``default`` without ``$schema``)."""
    if type(schema) is not dict or "$schema" not in schema:
        return default
    given = schema["$schema"]
    if type(given) is str:
        norm = given.rstrip("#").replace("https://json-schema.org/draft-07", "http://json-schema.org/draft-07")
        if norm in SUPPORTED_DIALECTS:
            return norm
    raise SchemaError(f"$schema {given!r} is not a supported dialect (supported: 2020-12, the default, and draft-07)")


def subschemas(schema: dict[str, Any], draft7: bool) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every direct subschema of ``schema``, with its place in it (``("properties", "a")``)."""
    for key in SCHEMA_KEYS:
        if key in schema:
            value = schema[key]
            if key == "items" and type(value) is list:
                yield from (((key, i), sub) for i, sub in enumerate(value))
            else:
                yield (key,), value
    for key in SCHEMA_MAPS:
        value = schema.get(key)
        if type(value) is dict:
            yield from (((key, name), sub) for name, sub in value.items())
    if draft7 and type(schema.get("dependencies")) is dict:
        for name, sub in schema["dependencies"].items():
            if type(sub) is not list:
                yield ("dependencies", name), sub
    for key in SCHEMA_LISTS:
        value = schema.get(key)
        if type(value) is list:
            yield from (((key, i), sub) for i, sub in enumerate(value))


def check_values(s: dict[str, Any], draft7: bool) -> None:
    """Refuse keyword values that would make a validation raise instead of answer
    (``pattern`` and ``patternProperties`` are the document's to check: see ``resources``)."""
    t = s.get("type")
    if t is not None:
        names = t if type(t) is list else [t]
        if not names or any(n not in TYPES for n in names):
            raise SchemaError(f"type must be one of {', '.join(TYPES)} (or a list of them), got {clip(t)}")
    for key in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"):
        if key in s and not (type_ok("integer", s[key]) and s[key] >= 0):
            raise SchemaError(f"{key} must be a non-negative integer, got {clip(s[key])}")
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in s and not type_ok("number", s[key]):
            raise SchemaError(f"{key} must be a number, got {clip(s[key])}")
    if "multipleOf" in s and not (type_ok("number", s["multipleOf"]) and s["multipleOf"] > 0):
        raise SchemaError(f"multipleOf must be a number above 0, got {clip(s['multipleOf'])}")
    if "enum" in s and type(s["enum"]) is not list:
        raise SchemaError("enum must be a list")
    if "required" in s and (type(s["required"]) is not list or any(type(x) is not str for x in s["required"])):
        raise SchemaError("required must be a list of property names")
    dep = s.get("dependentRequired")
    if dep is not None and (type(dep) is not dict or any(type(v) is not list or any(type(x) is not str for x in v) for v in dep.values())):
        raise SchemaError("dependentRequired maps property names to lists of property names")
    for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependentRequired"):
        if key in s and (type(s[key]) is not dict or any(type(k) is not str for k in s[key])):
            raise SchemaError(f"{key} must be an object whose keys are strings")
    for key in ("prefixItems", "allOf", "anyOf", "oneOf"):
        if key in s and (type(s[key]) is not list or (key != "prefixItems" and not s[key])):
            raise SchemaError(f"{key} must be a non-empty list of schemas")
    if "items" in s and type(s["items"]) is list and not draft7:
        raise SchemaError("items is a schema in 2020-12 (a list of schemas is prefixItems)")
