"""JSON Schema 2020-12 (and draft-07) validation of tool arguments, sans-I/O.

The revision says servers MUST validate tool inputs, and that schemas without
``$schema`` are 2020-12. This module compiles a tool's ``inputSchema`` once
(``validator_for``) and answers, per call, the list of places where the
arguments break it (``Validator.errors``). It is imported only when a tool with
a schema beyond ``{type: object}`` is called (or checked), so a spawn that does
not need it never pays for it.

Why not the ``jsonschema`` package: it would be a fourth runtime dependency
(with ``referencing`` and ``rpds``) whose import costs several times this whole
module's on every spawn that calls such a tool (numbers in docs/performance.md);
what tool schemas use is the validation and applicator vocabularies below.

What it does, and what it refuses:

- every assertion of the 2020-12 validation vocabulary, the applicators
  (``allOf``/``anyOf``/``oneOf``/``not``, ``if``/``then``/``else``,
  ``dependentSchemas``, ``prefixItems``/``items``/``contains``,
  ``properties``/``patternProperties``/``additionalProperties``/``propertyNames``),
  ``unevaluatedItems``/``unevaluatedProperties`` with annotations from passing
  subschemas only; ``format`` is an annotation (2020-12's default);
- ``$ref`` and ``$dynamicRef`` resolved as RFC 3986 says against the base URI of
  the schema resource they are written in (an ``$id`` starts one; ``urn:`` too):
  to a resource of the document, a JSON pointer within it, or an ``$anchor`` /
  ``$dynamicAnchor`` of that resource; a ``$dynamicRef`` whose target bears the
  ``$dynamicAnchor`` it names takes the outermost one of the dynamic scope. Anything
  outside the document, above all a network URI, is a ``SchemaError``: it is never
  fetched (basic/index.mdx), and an unresolved reference is refused rather than
  treated as permissive. So are the dialects' metaschemas and custom vocabularies
  (documents mockmcp does not carry). With that, every required case of the official
  JSON-Schema-Test-Suite (draft2020-12 and draft7) that needs no remote document
  passes (tests/scenario/test_json_schema_suite.py);
- draft-07 (``$schema`` naming it): ``items`` as a list, ``additionalItems``,
  ``dependencies``, ``$ref`` overriding its siblings. Any other ``$schema`` is a
  ``SchemaError`` naming the dialects supported;
- ``pattern``/``patternProperties`` go through ``matching``'s bounded regexes (a
  pattern whose matching time cannot be bounded is a ``SchemaError``); ECMA-262's
  Unicode property escapes of general categories (``\\p{Letter}``, ``\\P{Nd}``)
  become character classes, other properties are a ``SchemaError``.

``validator_for`` compiles each distinct schema value once per process and hands the
same validator to every tool whose schema equals it.

Bounds (a schema and arguments may both be large): at most ``MAX_SUBSCHEMAS``
subschemas per schema, ``MAX_DEPTH`` nested evaluations (a ``$ref`` cycle that does
not descend into the instance ends there) and ``MAX_STEPS`` evaluations per call;
past either, the call is reported invalid with that reason, never an exception.
"""

from __future__ import annotations

import json
import marshal
import math
import re
from typing import Any, Callable, Iterator

from mockmcp.scenario import matching
from mockmcp.wire.lazyre import LazyPattern

MAX_SUBSCHEMAS = 10_000
MAX_DEPTH = 128
MAX_STEPS = 200_000
MAX_REPORTED = 8

DIALECT_2020 = "https://json-schema.org/draft/2020-12/schema"
DIALECT_07 = "http://json-schema.org/draft-07/schema"
SUPPORTED_DIALECTS = (DIALECT_2020, DIALECT_07)


class SchemaError(ValueError):
    """The schema cannot be used to validate (unknown dialect, unresolved ``$ref``, a bad keyword value)."""


class _Budget(Exception):
    """Raised inside a validation when a bound is reached (caught in ``Validator.errors``)."""


_SCHEMA_KEYS = ("items", "contains", "additionalProperties", "propertyNames", "not", "if", "then", "else",
                "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")


def _dialect(schema: Any, default: str = DIALECT_2020) -> str:
    if type(schema) is not dict or "$schema" not in schema:
        return default
    given = schema["$schema"]
    if type(given) is str:
        norm = given.rstrip("#").replace("https://json-schema.org/draft-07", "http://json-schema.org/draft-07")
        if norm in SUPPORTED_DIALECTS:
            return norm
    raise SchemaError(f"$schema {given!r} is not a supported dialect (supported: 2020-12, the default, and draft-07)")


def _subschemas(schema: dict[str, Any], draft7: bool) -> Iterator[tuple[str, Any]]:
    """Every direct subschema of ``schema`` with its JSON pointer step."""
    for key in _SCHEMA_KEYS:
        if key in schema:
            value = schema[key]
            if key == "items" and type(value) is list:
                for i, sub in enumerate(value):
                    yield f"items/{i}", sub
            else:
                yield key, value
    for key in _SCHEMA_MAPS:
        value = schema.get(key)
        if type(value) is dict:
            for name, sub in value.items():
                yield f"{key}/{_escape(name)}", sub
    if draft7 and type(schema.get("dependencies")) is dict:
        for name, sub in schema["dependencies"].items():
            if type(sub) is not list:
                yield f"dependencies/{_escape(name)}", sub
    for key in _SCHEMA_LISTS:
        value = schema.get(key)
        if type(value) is list:
            for i, sub in enumerate(value):
                yield f"{key}/{i}", sub


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _percent_decode(text: str) -> str:
    """``%XX`` escapes of a URI fragment (pure: no urllib)."""
    if "%" not in text:
        return text
    out = bytearray()
    i = 0
    raw = text.encode()
    while i < len(raw):
        pair = raw[i + 1 : i + 3]
        if raw[i] == 0x25 and len(pair) == 2 and all(c in b"0123456789abcdefABCDEF" for c in pair):
            out.append(int(pair, 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")


_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")


def _type_ok(name: str, v: Any) -> bool:
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


def _canon(v: Any) -> Any:
    """A hashable form in which JSON-equal values are equal (1 == 1.0, true != 1)."""
    t = type(v)
    if t is bool:
        return ("b", v)
    if t is float:
        return ("n", int(v)) if v.is_integer() else ("n", v)
    if t is int:
        return ("n", v)
    if t is dict:
        return ("o", frozenset((k, _canon(x)) for k, x in v.items()))
    if t is list:
        return ("a", tuple(_canon(x) for x in v))
    return (t.__name__, v)


def _clip(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _at(path: tuple[Any, ...]) -> str:
    out = "$"
    for part in path:
        if type(part) is int:
            out += f"[{part}]"
        elif type(part) is str and part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


class _Run:
    """One validation: the errors found so far, the evaluation budget."""

    __slots__ = ("errors", "steps", "depth", "scope")

    def __init__(self, collect: bool, scope: list[str] | None) -> None:
        self.errors: list[str] | None = [] if collect else None
        self.steps = 0
        self.depth = 0
        # The schema resources entered so far, outermost first (the dynamic scope a
        # $dynamicRef searches); None when the schema has no such reference.
        self.scope = scope


# An evaluation's outcome: None if the instance fails, else the annotations the
# unevaluated* keywords need: (property names evaluated, item indices evaluated).
_Ann = tuple[set[str], set[int]]
_EMPTY: _Ann = (set(), set())


_URI = LazyPattern(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?\Z", re.S)


def _join(base: str, ref: str) -> str:
    """``ref`` resolved against the URI ``base`` (RFC 3986 section 5.2; pure: no urllib,
    and unlike ``urljoin`` it treats every scheme alike, ``urn:`` included)."""
    r = _URI.get().match(ref)
    b = _URI.get().match(base)
    assert r is not None and b is not None  # every string matches (each part is optional)
    scheme, authority, path, query, frag = r.groups()
    if scheme is None:
        bscheme, bauthority, bpath, bquery, _ = b.groups()
        scheme = bscheme
        if authority is None:
            authority = bauthority
            if not path:
                path = bpath
                query = query if query is not None else bquery
            elif not path.startswith("/"):
                if bauthority is not None and not bpath:
                    path = "/" + path
                else:
                    path = bpath[: bpath.rfind("/") + 1] + path
    out = f"{scheme}:" if scheme is not None else ""
    if authority is not None:
        out += f"//{authority}"
    out += _remove_dots(path)
    if query is not None:
        out += f"?{query}"
    return out if frag is None else f"{out}#{frag}"


def _remove_dots(path: str) -> str:
    if "." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if len(out) > 1 or (out and out[0] != ""):
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/".join(out)


# ECMA-262 Unicode property escapes (\p{L}, \p{Letter}, \P{Nd}, ...) by general category,
# which Python's re lacks: translated into character classes built from unicodedata.
_CATEGORY_NAMES = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
    "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc",
    "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl",
    "Other_Number": "No", "Punctuation": "P", "punct": "P", "Symbol": "S", "Separator": "Z", "Space_Separator": "Zs",
    "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Private_Use": "Co", "Unassigned": "Cn",
    "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe",
    "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Math_Symbol": "Sm",
    "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Line_Separator": "Zl",
    "Paragraph_Separator": "Zp", "Surrogate": "Cs",
}
_PROPERTY = LazyPattern(r"\\([pP])\{([^}]*)\}")
_category_ranges: dict[str, str] = {}


def _ranges(category: str) -> str:
    """The members of a general category (``L``: every ``L*``) as the inside of a character class."""
    found = _category_ranges.get(category)
    if found is None:
        import unicodedata  # only for patterns with \p{...}: a table of 1.1 M code points, built once

        cats = ("Lu", "Ll", "Lt") if category == "LC" else (category,)
        parts: list[str] = []
        start = -1
        for c in range(0x110001):
            inside = c < 0x110000 and unicodedata.category(chr(c)).startswith(cats)
            if inside and start < 0:
                start = c
            elif not inside and start >= 0:
                parts.append(_class_char(start) if start == c - 1 else f"{_class_char(start)}-{_class_char(c - 1)}")
                start = -1
        found = _category_ranges[category] = "".join(parts)
    return found


def _class_char(c: int) -> str:
    return f"\\U{c:08x}"


def _python_regex(pattern: str) -> str:
    """An ECMA-262 ``pattern`` as a Python regex: its Unicode property escapes become
    character classes (``SchemaError`` for a property that is not a general category)."""
    if "\\p{" not in pattern and "\\P{" not in pattern:
        return pattern
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        m = _PROPERTY.get().match(pattern, i) if c == "\\" else None
        if m is not None:
            name = m.group(2).removeprefix("General_Category=").removeprefix("gc=")
            category = _CATEGORY_NAMES.get(name, name)
            if category not in _CATEGORY_NAMES.values():
                raise SchemaError(f"pattern {pattern!r}: the Unicode property {m.group(0)} is not supported (general categories are)")
            if in_class and m.group(1) == "P":
                raise SchemaError(f"pattern {pattern!r}: {m.group(0)} inside a character class is not supported")
            ranges = _ranges(category)
            out.append(ranges if in_class else f"[{'^' if m.group(1) == 'P' else ''}{ranges}]")
            i = m.end()
            continue
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


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
        self.root = schema
        self.draft7 = _dialect(schema, default_dialect) == DIALECT_07
        # Every schema resource of the document by its absolute URI (the root's is its
        # $id, or "" without one), its anchors by (resource, name), and the base URI of
        # each subschema object (by identity: what its relative references resolve against).
        self.resources: dict[str, Any] = {}
        self.anchors: dict[tuple[str, str], Any] = {}
        self.dynamic_anchors: dict[tuple[str, str], Any] = {}
        self.base: dict[int, str] = {}
        # What each $ref and $dynamicRef points at, resolved once here; a $dynamicRef
        # whose target bears the $dynamicAnchor it names is looked up in the dynamic
        # scope at validation time (its name is kept beside the static target).
        self.refs: dict[int, Any] = {}
        self.dynamic_refs: dict[int, tuple[Any, str | None]] = {}
        self._patterns: dict[str, str] = {}  # a schema's pattern -> the Python regex that matches like it
        self._uses_unevaluated = False
        self._count = 0
        self._pending: list[tuple[dict[str, Any], str]] = []
        self._index(schema, "")
        self._resolve_pending()
        self._budget = [0, 0]  # evaluations and nesting of the compiled checks' $refs, per call
        self._fns: dict[int, Callable[[Any], bool]] = {}
        dynamic = any(name is not None for _, name in self.dynamic_refs.values())
        usable = compile_checks and not (self._uses_unevaluated or self.draft7 or dynamic)
        self._fast = self._compile(schema) if usable else None

    @property
    def has_compiled_checks(self) -> bool:
        """Whether compiled checks decide valid instances (else the evaluator does: the
        schema uses unevaluated*, a dynamic $dynamicRef or draft-07, or it was asked to)."""
        return self._fast is not None

    # ------------------------------------------------------------ compile

    def _own_id(self, schema: dict[str, Any]) -> Any:
        """The ``$id`` that applies to ``schema`` (draft-07 ignores every sibling of ``$ref``)."""
        if self.draft7 and "$ref" in schema:
            return None
        return schema.get("$id")

    def _index(self, top: Any, top_base: str) -> None:
        """Walk the subschemas below ``top`` (whose enclosing base URI is ``top_base``):
        check keyword values, register resources and anchors, queue references."""
        stack: list[tuple[Any, str]] = [(top, top_base)]
        while stack:
            schema, base = stack.pop()
            self._count += 1
            if self._count > MAX_SUBSCHEMAS:
                raise SchemaError(f"the schema has more than {MAX_SUBSCHEMAS} subschemas")
            if type(schema) is bool:
                continue
            if type(schema) is not dict:
                raise SchemaError(f"a schema is an object or a boolean, not {_clip(schema)}")
            if id(schema) in self.base:
                continue  # the same object reached twice (a YAML alias): indexed already
            sid = self._own_id(schema)
            if sid is not None:
                if type(sid) is not str:
                    raise SchemaError(f"$id must be a string, got {_clip(sid)}")
                uri, _, frag = sid.partition("#")
                if uri:
                    base = _join(base, uri)
                    self.resources.setdefault(base, schema)
                if frag and self.draft7:
                    self.anchors[(base, _percent_decode(frag))] = schema
            elif schema is self.root:
                self.resources.setdefault(base, schema)
            self.base[id(schema)] = base
            for key in ("$anchor", "$dynamicAnchor"):
                if key in schema:
                    if type(schema[key]) is not str:
                        raise SchemaError(f"{key} must be a string")
                    self.anchors.setdefault((base, schema[key]), schema)
            if type(schema.get("$dynamicAnchor")) is str and not self.draft7:
                self.dynamic_anchors[(base, schema["$dynamicAnchor"])] = schema
            for key in ("$ref", "$dynamicRef"):
                if key in schema and (key == "$ref" or not self.draft7):
                    self._pending.append((schema, base))
                    break
            self._keyword_values(schema)
            if "unevaluatedItems" in schema or "unevaluatedProperties" in schema:
                self._uses_unevaluated = True
            stack.extend((sub, base) for _, sub in _subschemas(schema, self.draft7))

    def _resolve_pending(self) -> None:
        """Resolve every queued reference; one that lands outside the walked subschemas
        (``#/properties/a/x-unknown``) has that place walked, which may queue more."""
        while self._pending:
            schema, base = self._pending.pop()
            if "$ref" in schema:
                self.refs[id(schema)] = self._locate(schema["$ref"], base, "$ref")
            if "$dynamicRef" in schema and not self.draft7:
                ref = schema["$dynamicRef"]
                target = self._locate(ref, base, "$dynamicRef")
                name: str | None = None
                uri, _, frag = _join(base, ref).partition("#")
                frag = _percent_decode(frag)
                if frag and not frag.startswith("/") and self.dynamic_anchors.get((uri, frag)) is target:
                    name = frag  # bookended: the dynamic scope decides
                self.dynamic_refs[id(schema)] = (target, name)

    def _locate(self, ref: Any, base: str, key: str) -> Any:
        """The subschema ``ref`` names, resolved against ``base`` (``SchemaError`` if none)."""
        if type(ref) is not str:
            raise SchemaError(f"{key} must be a string, got {_clip(ref)}")
        uri, _, frag = _join(base, ref).partition("#")
        target = self.resources.get(uri)
        if target is None:
            raise SchemaError(
                f"{key} {ref!r} points outside the schema: mockmcp never fetches a schema "
                "(basic/index.mdx), so it cannot validate against it; put the definition in $defs"
            )
        frag = _percent_decode(frag)
        if not frag:
            return target
        if not frag.startswith("/"):
            if (uri, frag) in self.anchors:
                return self.anchors[(uri, frag)]
            raise SchemaError(f"{key} {ref!r}: no $anchor {frag!r} in the schema")
        node, node_base, parent_base = target, uri, uri
        for part in frag[1:].split("/"):
            part = _unescape(part)
            if type(node) is dict and part in node:
                node = node[part]
            elif type(node) is list and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SchemaError(f"{key} {ref!r}: no such place in the schema")
            parent_base = node_base
            if type(node) is dict:
                sid = self._own_id(node)
                if type(sid) is str and sid.partition("#")[0]:
                    node_base = _join(node_base, sid.partition("#")[0])
        if type(node) is not dict and type(node) is not bool:
            raise SchemaError(f"{key} {ref!r} does not point at a schema")
        if type(node) is dict and id(node) not in self.base:
            self._index(node, parent_base)  # a place the walk did not reach (below an unknown keyword)
        return node

    def _keyword_values(self, s: dict[str, Any]) -> None:
        """Refuse keyword values that would make a validation raise instead of answer."""
        t = s.get("type")
        if t is not None:
            names = t if type(t) is list else [t]
            if not names or any(n not in _TYPES for n in names):
                raise SchemaError(f"type must be one of {', '.join(_TYPES)} (or a list of them), got {_clip(t)}")
        for key in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"):
            if key in s and not (_type_ok("integer", s[key]) and s[key] >= 0):
                raise SchemaError(f"{key} must be a non-negative integer, got {_clip(s[key])}")
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in s and not _type_ok("number", s[key]):
                raise SchemaError(f"{key} must be a number, got {_clip(s[key])}")
        if "multipleOf" in s and not (_type_ok("number", s["multipleOf"]) and s["multipleOf"] > 0):
            raise SchemaError(f"multipleOf must be a number above 0, got {_clip(s['multipleOf'])}")
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
        if "items" in s and type(s["items"]) is list and not self.draft7:
            raise SchemaError("items is a schema in 2020-12 (a list of schemas is prefixItems)")
        patterns = [s["pattern"]] if "pattern" in s else []
        patterns += list((s.get("patternProperties") or {}).keys())
        for pattern in patterns:
            if type(pattern) is str and pattern not in self._patterns:
                self._patterns[pattern] = _python_regex(pattern)
            python = self._patterns.get(pattern, pattern)
            problem = matching.regex_problem(python, "pattern")
            if problem is not None:
                if python != pattern:  # name the pattern as written, not its translation
                    problem = problem.replace(json.dumps(python, ensure_ascii=False), json.dumps(pattern, ensure_ascii=False))
                raise SchemaError(problem)



    # ------------------------------------------------------------ compiled checks

    def _compile(self, s: Any) -> Callable[[Any], bool]:
        """``s`` as one function ``instance -> valid?`` (2020-12 without unevaluated*).

        A closure per schema object, built once: a call runs only the keywords the
        schema has, with no annotations and no report (about half the evaluator's
        time on the tools of the bundled scenarios, measured in docs/performance.md)."""
        if s is True:
            return _yes
        if s is False:
            return _no
        known = self._fns.get(id(s))
        if known is not None:
            return known
        cell: list[Callable[[Any], bool]] = []
        self._fns[id(s)] = lambda v: cell[0](v)  # a $ref back here during the build
        fn = self._build(s)
        cell.append(fn)
        self._fns[id(s)] = fn
        return fn

    def _build(self, s: dict[str, Any]) -> Callable[[Any], bool]:
        anyv: list[Callable[[Any], bool]] = []
        nums: list[Callable[[Any], bool]] = []
        strs: list[Callable[[Any], bool]] = []
        arrs: list[Callable[[Any], bool]] = []
        objs: list[Callable[[Any], bool]] = []
        if "$ref" in s:
            anyv.append(self._ref(self.refs[id(s)]))
        if id(s) in self.dynamic_refs:  # (only ones without a dynamic scope: see __init__)
            anyv.append(self._ref(self.dynamic_refs[id(s)][0]))
        exact: type | None = None
        if "type" in s:
            names = tuple(s["type"]) if type(s["type"]) is list else (s["type"],)
            if len(names) == 1 and names[0] in _EXACT:
                exact = _EXACT[names[0]]  # folded into the combined function (the commonest check)
            elif len(names) == 1:
                name = names[0]
                anyv.append(lambda v: _type_ok(name, v))
            else:
                anyv.append(lambda v: any(_type_ok(n, v) for n in names))
        if "const" in s:
            const = _canon(s["const"])
            anyv.append(lambda v: _canon(v) == const)
        if "enum" in s:
            allowed = [_canon(e) for e in s["enum"]]
            anyv.append(lambda v: _canon(v) in allowed)
        for key, test in (("minimum", _lt), ("maximum", _gt), ("exclusiveMinimum", _le), ("exclusiveMaximum", _ge)):
            if key in s:
                nums.append(_bound(test, s[key]))
        if "multipleOf" in s:
            m = s["multipleOf"]
            nums.append(lambda v: _multiple(v, m))
        if "minLength" in s:
            low = s["minLength"]
            strs.append(lambda v: len(v) >= low)
        if "maxLength" in s:
            high = s["maxLength"]
            strs.append(lambda v: len(v) <= high)
        if "pattern" in s:
            pattern = self._patterns[s["pattern"]]
            strs.append(lambda v: matching.regex_search(pattern, v))
        self._build_array(s, arrs)
        self._build_object(s, objs)
        if "allOf" in s:
            subs = [self._compile(x) for x in s["allOf"]]
            anyv.append(lambda v: all(f(v) for f in subs))
        if "anyOf" in s:
            alts = [self._compile(x) for x in s["anyOf"]]
            anyv.append(lambda v: any(f(v) for f in alts))
        if "oneOf" in s:
            ones = [self._compile(x) for x in s["oneOf"]]
            anyv.append(lambda v: sum(1 for f in ones if f(v)) == 1)
        if "not" in s:
            neg = self._compile(s["not"])
            anyv.append(lambda v: not neg(v))
        if "if" in s:
            cond = self._compile(s["if"])
            then = self._compile(s.get("then", True))
            other = self._compile(s.get("else", True))
            anyv.append(lambda v: then(v) if cond(v) else other(v))
        return _combine(exact, anyv, nums, strs, arrs, objs)

    def _ref(self, target: Any) -> Callable[[Any], bool]:
        fn = self._compile(target)
        budget = self._budget

        def ref(v: Any) -> bool:
            budget[0] += 1
            budget[1] += 1
            try:
                if budget[0] > MAX_STEPS or budget[1] > MAX_DEPTH:
                    raise _Budget("over budget")
                return fn(v)
            finally:
                budget[1] -= 1

        return ref

    def _build_array(self, s: dict[str, Any], arrs: list[Callable[[Any], bool]]) -> None:
        if "minItems" in s:
            low = s["minItems"]
            arrs.append(lambda v: len(v) >= low)
        if "maxItems" in s:
            high = s["maxItems"]
            arrs.append(lambda v: len(v) <= high)
        if s.get("uniqueItems") is True:
            arrs.append(lambda v: len({_canon(x) for x in v}) == len(v))
        prefix = [self._compile(x) for x in s.get("prefixItems", ())]
        if prefix:
            arrs.append(lambda v: all(f(x) for f, x in zip(prefix, v)))
        if "items" in s:
            rest = self._compile(s["items"])
            start = len(prefix)
            arrs.append(lambda v: all(rest(x) for x in v[start:]))
        if "contains" in s:
            has = self._compile(s["contains"])
            low_c = s.get("minContains", 1)
            high_c = s.get("maxContains")
            arrs.append(lambda v: low_c <= sum(1 for x in v if has(x)) <= (len(v) if high_c is None else high_c))

    def _build_object(self, s: dict[str, Any], objs: list[Callable[[Any], bool]]) -> None:
        if "minProperties" in s:
            low = s["minProperties"]
            objs.append(lambda v: len(v) >= low)
        if "maxProperties" in s:
            high = s["maxProperties"]
            objs.append(lambda v: len(v) <= high)
        required = frozenset(s.get("required", ()))
        # (merged into `declared` below when that runs: one call fewer for the common schema)
        merge_required = bool(required) and bool(s.get("properties")) and not s.get("patternProperties") and "additionalProperties" not in s
        if required and not merge_required:
            objs.append(lambda v: v.keys() >= required)
        dep = s.get("dependentRequired")
        if dep:
            pairs = [(k, tuple(need)) for k, need in dep.items()]
            objs.append(lambda v: all(all(o in v for o in need) for k, need in pairs if k in v))
        if s.get("dependentSchemas"):
            schemas = [(k, self._compile(x)) for k, x in s["dependentSchemas"].items()]
            objs.append(lambda v: all(f(v) for k, f in schemas if k in v))
        if "propertyNames" in s:
            names = self._compile(s["propertyNames"])
            objs.append(lambda v: all(names(k) for k in v))
        props = {k: self._compile(x) for k, x in (s.get("properties") or {}).items()}
        patterns = [(self._patterns[p], self._compile(x)) for p, x in (s.get("patternProperties") or {}).items()]
        extra = self._compile(s["additionalProperties"]) if "additionalProperties" in s else None
        if patterns or extra is not None:

            def members(v: dict[str, Any]) -> bool:
                for k, x in v.items():
                    covered = False
                    f = props.get(k)
                    if f is not None:
                        covered = True
                        if not f(x):
                            return False
                    for p, g in patterns:
                        if matching.regex_search(p, k):
                            covered = True
                            if not g(x):
                                return False
                    if not covered and extra is not None and not extra(x):
                        return False
                return True

            objs.append(members)
        elif props:
            # A property whose schema is only a type is checked inline, without calling its check.
            items = tuple((k, f, _CHECKED_TYPE.get(f)) for k, f in props.items())
            needed = required if merge_required else frozenset()

            def declared(v: dict[str, Any]) -> bool:
                if needed and not v.keys() >= needed:
                    return False
                for k, f, t in items:
                    x = v.get(k, _MISSING)
                    if x is _MISSING:
                        continue
                    if t is not None:
                        if type(x) is not t:
                            return False
                    elif not f(x):
                        return False
                return True

            objs.append(declared)

    # ------------------------------------------------------------ validate

    def errors(self, instance: Any) -> list[str]:
        """Where ``instance`` breaks the schema, at most ``MAX_REPORTED`` places (``[]``: valid).

        A valid instance (the common case) is decided by the compiled checks alone;
        the evaluator below runs only to explain a failure, or when the schema uses
        unevaluated* (which need annotations)."""
        if self._fast is not None:
            budget = self._budget
            budget[0] = budget[1] = 0
            try:
                if self._fast(instance):
                    return []
            except _Budget:
                pass  # the evaluator meets the same bound and says where
        scope: list[str] | None = [] if self.dynamic_refs else None
        run = _Run(collect=False, scope=scope)
        try:
            if self._fast is None and self._eval(self.root, instance, (), run) is not None:
                return []
            run = _Run(collect=True, scope=scope)
            self._eval(self.root, instance, (), run)
        except _Budget as exc:
            return [str(exc)]
        assert run.errors is not None
        return run.errors[:MAX_REPORTED] or ["$: does not match the schema"]

    def _fail(self, run: _Run, path: tuple[Any, ...], message: str) -> None:
        if run.errors is not None and len(run.errors) < MAX_REPORTED:
            run.errors.append(f"{_at(path)}: {message}")

    def _quiet(self, schema: Any, v: Any, path: tuple[Any, ...], run: _Run) -> _Ann | None:
        """Evaluate without reporting (a branch of anyOf, oneOf, not, if, contains)."""
        saved = run.errors
        run.errors = None
        try:
            return self._eval(schema, v, path, run)
        finally:
            run.errors = saved

    def _sub(self, schema: Any, v: Any, path: tuple[Any, ...], run: _Run, why: str) -> _Ann | None:
        """Evaluate a subschema that a ``false`` may stand for ("not allowed here")."""
        if schema is False:
            self._fail(run, path, f"is not allowed ({why})")
            return None
        return self._eval(schema, v, path, run)

    def _eval(self, schema: Any, v: Any, path: tuple[Any, ...], run: _Run) -> _Ann | None:
        if schema is True:
            return _EMPTY
        if schema is False:
            self._fail(run, path, "no value is allowed here")
            return None
        run.steps += 1
        if run.steps > MAX_STEPS:
            raise _Budget(f"{_at(path)}: validation stopped after {MAX_STEPS} evaluations (the schema is too costly for these arguments)")
        run.depth += 1
        try:
            if run.depth > MAX_DEPTH:
                raise _Budget(f"{_at(path)}: validation nests deeper than {MAX_DEPTH} ($ref cycle?)")
            scope = run.scope
            if scope is None:
                return self._keywords(schema, v, path, run)
            resource = self.base.get(id(schema))  # (every walked subschema has one)
            if resource is None or (scope and scope[-1] == resource):
                return self._keywords(schema, v, path, run)
            scope.append(resource)
            try:
                return self._keywords(schema, v, path, run)
            finally:
                scope.pop()
        finally:
            run.depth -= 1

    def _keywords(self, s: dict[str, Any], v: Any, path: tuple[Any, ...], run: _Run) -> _Ann | None:
        ok = True
        props: set[str] = set()
        items: set[int] = set()

        def merge(ann: _Ann | None) -> None:
            if ann is not None:
                props.update(ann[0])
                items.update(ann[1])

        if "$ref" in s:
            ann = self._eval(self.refs[id(s)], v, path, run)
            if ann is None:
                ok = False
            merge(ann)
            if self.draft7:
                return (props, items) if ok else None
        if id(s) in self.dynamic_refs:
            ann = self._eval(self._dynamic_target(s, run), v, path, run)
            if ann is None:
                ok = False
            merge(ann)
        tv = type(v)
        # ---- any instance
        if "type" in s:
            t = s["type"]
            names = t if type(t) is list else (t,)
            if not any(_type_ok(n, v) for n in names):
                self._fail(run, path, f"{_clip(v)} is not of type {' or '.join(names)}")
                ok = False
        if "const" in s and _canon(v) != _canon(s["const"]):
            self._fail(run, path, f"{_clip(v)} is not {_clip(s['const'])}")
            ok = False
        if "enum" in s:
            cv = _canon(v)
            if not any(cv == _canon(e) for e in s["enum"]):
                self._fail(run, path, f"{_clip(v)} is not one of {_clip(s['enum'])}")
                ok = False
        # ---- numbers
        if tv is int or tv is float:
            ok = self._number(s, v, path, run) and ok
        # ---- strings
        elif tv is str:
            n = len(v)
            if "minLength" in s and n < s["minLength"]:
                self._fail(run, path, f"{_clip(v)} is shorter than {int(s['minLength'])} characters")
                ok = False
            if "maxLength" in s and n > s["maxLength"]:
                self._fail(run, path, f"{_clip(v)} is longer than {int(s['maxLength'])} characters")
                ok = False
            if "pattern" in s and not matching.regex_search(self._patterns[s["pattern"]], v):
                self._fail(run, path, f"{_clip(v)} does not match pattern {s['pattern']!r}")
                ok = False
        # ---- arrays
        # (their annotations count for this object's unevaluated* even when it fails: the
        # result fails anyway, and the report names only what is wrong)
        elif tv is list:
            ok = self._array(s, v, path, run, items) and ok
        # ---- objects
        elif tv is dict:
            ok = self._object(s, v, path, run, props) and ok
        # ---- applicators on any instance
        if "allOf" in s:
            for sub in s["allOf"]:
                ann = self._eval(sub, v, path, run)
                if ann is None:
                    ok = False
                merge(ann)
        if "anyOf" in s:
            found = False
            for sub in s["anyOf"]:
                ann = self._quiet(sub, v, path, run)
                if ann is not None:
                    found = True
                    merge(ann)  # every passing branch annotates
            if not found:
                self._fail(run, path, "does not match any schema of anyOf")
                ok = False
        if "oneOf" in s:
            passing = []
            for sub in s["oneOf"]:
                ann = self._quiet(sub, v, path, run)
                if ann is not None:
                    passing.append(ann)
            if len(passing) != 1:
                self._fail(run, path, f"matches {len(passing)} schemas of oneOf, not exactly one")
                ok = False
            else:
                merge(passing[0])
        if "not" in s and self._quiet(s["not"], v, path, run) is not None:
            self._fail(run, path, "matches the schema of not")
            ok = False
        if "if" in s:
            cond = self._quiet(s["if"], v, path, run)
            branch = s.get("then") if cond is not None else s.get("else")
            merge(cond)
            if branch is not None:
                ann = self._eval(branch, v, path, run)
                if ann is None:
                    ok = False
                merge(ann)
        # ---- unevaluated (after every other keyword of this schema object)
        if tv is list and "unevaluatedItems" in s:
            for i, item in enumerate(v):
                if i not in items:
                    if self._sub(s["unevaluatedItems"], item, path + (i,), run, "unevaluatedItems") is None:
                        ok = False
                    items.add(i)
        if tv is dict and "unevaluatedProperties" in s:
            for key, value in v.items():
                if key not in props:
                    if self._sub(s["unevaluatedProperties"], value, path + (key,), run, "unevaluatedProperties") is None:
                        ok = False
                    props.add(key)
        return (props, items) if ok else None

    def _dynamic_target(self, s: dict[str, Any], run: _Run) -> Any:
        """Where a ``$dynamicRef`` leads: its static target, unless that bears the
        ``$dynamicAnchor`` it names; then the outermost resource of the dynamic scope
        that has a ``$dynamicAnchor`` of that name."""
        target, name = self.dynamic_refs[id(s)]
        if name is not None and run.scope is not None:
            for resource in run.scope:
                found = self.dynamic_anchors.get((resource, name))
                if found is not None:
                    return found
        return target

    def _number(self, s: dict[str, Any], v: int | float, path: tuple[Any, ...], run: _Run) -> bool:
        ok = True
        for key, within, word in (
            ("minimum", _lt, "less than"),
            ("maximum", _gt, "greater than"),
            ("exclusiveMinimum", _le, "less than or equal to"),
            ("exclusiveMaximum", _ge, "greater than or equal to"),
        ):
            if key in s and not within(v, s[key]):
                self._fail(run, path, f"{_clip(v)} is {word} {s[key]}")
                ok = False
        if "multipleOf" in s and not _multiple(v, s["multipleOf"]):
            self._fail(run, path, f"{_clip(v)} is not a multiple of {s['multipleOf']}")
            ok = False
        return ok

    def _array(self, s: dict[str, Any], v: list[Any], path: tuple[Any, ...], run: _Run, evaluated: set[int]) -> bool:
        ok = True
        n = len(v)
        if "minItems" in s and n < s["minItems"]:
            self._fail(run, path, f"has {n} items, fewer than {int(s['minItems'])}")
            ok = False
        if "maxItems" in s and n > s["maxItems"]:
            self._fail(run, path, f"has {n} items, more than {int(s['maxItems'])}")
            ok = False
        if s.get("uniqueItems") is True:
            seen = set()
            for i, item in enumerate(v):
                c = _canon(item)
                if c in seen:
                    self._fail(run, path + (i,), "repeats an earlier item (uniqueItems)")
                    ok = False
                    break
                seen.add(c)
        prefix: Any = s.get("prefixItems")
        rest: Any = s.get("items")
        if self.draft7:
            if type(rest) is list:
                prefix, rest = rest, s.get("additionalItems")
            else:
                prefix = None
        for i, sub in enumerate(prefix or ()):
            if i >= n:
                break
            if self._eval(sub, v[i], path + (i,), run) is None:
                ok = False
            evaluated.add(i)
        if rest is not None:
            start = len(prefix or ())
            for i in range(start, n):
                if self._sub(rest, v[i], path + (i,), run, "no items past the prefix") is None:
                    ok = False
                evaluated.add(i)
        if "contains" in s:
            matched = [i for i, item in enumerate(v) if self._quiet(s["contains"], item, path + (i,), run) is not None]
            low = s.get("minContains", 1)
            if len(matched) < low:
                self._fail(run, path, f"has {len(matched)} items matching contains, fewer than {int(low)}")
                ok = False
            if "maxContains" in s and len(matched) > s["maxContains"]:
                self._fail(run, path, f"has {len(matched)} items matching contains, more than {int(s['maxContains'])}")
                ok = False
            if not self.draft7:
                evaluated.update(matched)
        return ok

    def _object(self, s: dict[str, Any], v: dict[str, Any], path: tuple[Any, ...], run: _Run, evaluated: set[str]) -> bool:
        ok = True
        n = len(v)
        if "minProperties" in s and n < s["minProperties"]:
            self._fail(run, path, f"has {n} properties, fewer than {int(s['minProperties'])}")
            ok = False
        if "maxProperties" in s and n > s["maxProperties"]:
            self._fail(run, path, f"has {n} properties, more than {int(s['maxProperties'])}")
            ok = False
        for key in s.get("required", ()):
            if key not in v:
                self._fail(run, path, f"required property {key!r} is missing")
                ok = False
        for key, needs in (s.get("dependentRequired") or {}).items():
            if key in v:
                for other in needs:
                    if other not in v:
                        self._fail(run, path, f"property {other!r} is required when {key!r} is present")
                        ok = False
        dependencies = s.get("dependencies") if self.draft7 else None
        for key, dep in (dependencies or {}).items():
            if key in v:
                if type(dep) is list:
                    for other in dep:
                        if other not in v:
                            self._fail(run, path, f"property {other!r} is required when {key!r} is present")
                            ok = False
                elif self._eval(dep, v, path, run) is None:
                    ok = False
        for key, sub in (s.get("dependentSchemas") or {}).items():
            if key in v:
                ann = self._eval(sub, v, path, run)
                if ann is None:
                    ok = False
                else:
                    evaluated.update(ann[0])
        properties = s.get("properties") or {}
        patterns = s.get("patternProperties") or {}
        additional = s.get("additionalProperties")
        names = s.get("propertyNames")
        for key, value in v.items():
            if names is not None and self._quiet(names, key, path, run) is None:
                self._fail(run, path, f"property name {key!r} does not match propertyNames")
                ok = False
            covered = False
            if key in properties:
                covered = True
                if self._eval(properties[key], value, path + (key,), run) is None:
                    ok = False
            for pattern, sub in patterns.items():
                if matching.regex_search(self._patterns[pattern], key):
                    covered = True
                    if self._eval(sub, value, path + (key,), run) is None:
                        ok = False
            if not covered and additional is not None:
                if self._sub(additional, value, path + (key,), run, "additionalProperties") is None:
                    ok = False
                covered = True
            if covered:
                evaluated.add(key)
        return ok


def _multiple(v: int | float, m: int | float) -> bool:
    if type(v) is int and type(m) is int:
        return v % m == 0
    if isinstance(v, float) and not math.isfinite(v):
        return False
    from fractions import Fraction  # exact decimal arithmetic, only for non-integer multipleOf (4 ms to import)

    try:
        return (Fraction(str(v)) / Fraction(str(m))).denominator == 1
    except (ValueError, OverflowError, ZeroDivisionError):
        return False


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
        raise SchemaError(str(found))  # (a fresh one: re-raising one object would grow its traceback)
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


def _yes(v: Any) -> bool:
    return True


def _no(v: Any) -> bool:
    return False


_EXACT: dict[str, type] = {"string": str, "object": dict, "array": list, "boolean": bool}


def _type_check(t: type) -> Callable[[Any], bool]:
    return lambda v: type(v) is t


# The check of a schema that is only an exact type, one function per type, and the type each
# one checks (an object's `declared` members test such a property inline).
_TYPE_CHECKS: dict[type, Callable[[Any], bool]] = {t: _type_check(t) for t in _EXACT.values()}
_CHECKED_TYPE: dict[Callable[[Any], bool], type] = {f: t for t, f in _TYPE_CHECKS.items()}


# Is ``v`` within the bound ``b`` of minimum, maximum, exclusiveMinimum, exclusiveMaximum?
def _lt(v: Any, b: Any) -> bool:
    return bool(v >= b)


def _gt(v: Any, b: Any) -> bool:
    return bool(v <= b)


def _le(v: Any, b: Any) -> bool:
    return bool(v > b)


def _ge(v: Any, b: Any) -> bool:
    return bool(v < b)


def _bound(test: Callable[[Any, Any], bool], b: Any) -> Callable[[Any], bool]:
    return lambda v: test(v, b)


_MISSING = object()


def _combine(
    exact: type | None,
    anyv: list[Callable[[Any], bool]],
    nums: list[Callable[[Any], bool]],
    strs: list[Callable[[Any], bool]],
    arrs: list[Callable[[Any], bool]],
    objs: list[Callable[[Any], bool]],
) -> Callable[[Any], bool]:
    """One function running the checks that apply to the instance's JSON type."""
    by_type: dict[type, tuple[Callable[[Any], bool], ...]] = {}
    if nums:
        by_type[int] = by_type[float] = tuple(nums)
    if strs:
        by_type[str] = tuple(strs)
    if arrs:
        by_type[list] = tuple(arrs)
    if objs:
        by_type[dict] = tuple(objs)
    general = tuple(anyv)
    if exact is not None and not general:
        own = by_type.get(exact, ())
        if not own:
            return _TYPE_CHECKS[exact]
        if len(own) == 1:
            only = own[0]
            return lambda v: type(v) is exact and only(v)
        if len(own) == 2:
            first, second = own
            return lambda v: type(v) is exact and first(v) and second(v)

        def typed(v: Any) -> bool:
            if type(v) is not exact:
                return False
            for f in own:
                if not f(v):
                    return False
            return True

        return typed
    if exact is not None:
        general = (lambda v: type(v) is exact, *general)
    if not by_type:
        if len(general) == 1:
            return general[0]
        return lambda v: all(f(v) for f in general)

    def fn(v: Any) -> bool:
        for f in general:
            if not f(v):
                return False
        for f in by_type.get(type(v), ()):
            if not f(v):
                return False
        return True

    return fn
