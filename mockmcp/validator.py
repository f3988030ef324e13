"""JSON Schema 2020-12 (and draft-07) validation of tool arguments, sans-I/O.

The revision says servers MUST validate tool inputs, and that schemas without
``$schema`` are 2020-12. This module compiles a tool's ``inputSchema`` once
(``compile_schema``) and answers, per call, the list of places where the
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
- ``$ref`` to ``#``, a JSON pointer (``#/$defs/x``), an ``$anchor`` (``#name``) or an
  ``$id`` of the same document; ``$dynamicRef`` resolves like ``$ref`` to a
  ``$dynamicAnchor`` of the document (no dynamic scope). A fragment is read from the
  document's root, also inside a subschema with an ``$id`` of its own (an embedded
  resource's own base URI is not tracked). Anything else, above all a
  network URI, is a ``SchemaError``: it is never fetched (basic/index.mdx), and an
  unresolved reference is refused rather than treated as permissive;
- draft-07 (``$schema`` naming it): ``items`` as a list, ``additionalItems``,
  ``dependencies``, ``$ref`` overriding its siblings. Any other ``$schema`` is a
  ``SchemaError`` naming the dialects supported;
- ``pattern``/``patternProperties`` go through ``matching``'s bounded regexes (a
  pattern whose matching time cannot be bounded is a ``SchemaError``).

Bounds (a schema and arguments may both be large): at most ``MAX_SUBSCHEMAS``
subschemas per schema, ``MAX_DEPTH`` nested evaluations (a ``$ref`` cycle that does
not descend into the instance ends there) and ``MAX_STEPS`` evaluations per call;
past either, the call is reported invalid with that reason, never an exception.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator

from . import matching

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


def _dialect(schema: Any) -> str:
    if type(schema) is not dict or "$schema" not in schema:
        return DIALECT_2020
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

    __slots__ = ("errors", "steps", "depth")

    def __init__(self, collect: bool) -> None:
        self.errors: list[str] | None = [] if collect else None
        self.steps = 0
        self.depth = 0


# An evaluation's outcome: None if the instance fails, else the annotations the
# unevaluated* keywords need: (property names evaluated, item indices evaluated).
_Ann = tuple[set[str], set[int]]
_EMPTY: _Ann = (set(), set())


class Validator:
    """A compiled schema: ``errors(instance)`` lists what the instance breaks."""

    def __init__(self, schema: Any) -> None:
        self.root = schema
        self.draft7 = _dialect(schema) == DIALECT_07
        self.anchors: dict[str, Any] = {}
        self.ids: dict[str, Any] = {}
        self._patterns: set[str] = set()
        self._uses_unevaluated = False
        self._index(schema)
        self._check_refs(schema)
        self._budget = [0, 0]  # evaluations and nesting of the compiled checks' $refs, per call
        self._fns: dict[int, Callable[[Any], bool]] = {}
        self._fast = None if self._uses_unevaluated or self.draft7 else self._compile(schema)

    # ------------------------------------------------------------ compile

    def _index(self, root: Any) -> None:
        count = 0
        stack = [root]
        while stack:
            schema = stack.pop()
            count += 1
            if count > MAX_SUBSCHEMAS:
                raise SchemaError(f"the schema has more than {MAX_SUBSCHEMAS} subschemas")
            if type(schema) is bool:
                continue
            if type(schema) is not dict:
                raise SchemaError(f"a schema is an object or a boolean, not {_clip(schema)}")
            for key in ("$anchor", "$dynamicAnchor"):
                if key in schema:
                    if type(schema[key]) is not str:
                        raise SchemaError(f"{key} must be a string")
                    self.anchors[schema[key]] = schema
            sid = schema.get("$id")
            if type(sid) is str and schema is not root:
                base, _, frag = sid.partition("#")
                if base:
                    self.ids[base] = schema
                if frag and self.draft7:
                    self.anchors[frag] = schema
            self._keyword_values(schema)
            if "unevaluatedItems" in schema or "unevaluatedProperties" in schema:
                self._uses_unevaluated = True
            stack.extend(sub for _, sub in _subschemas(schema, self.draft7))

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
        for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
            if key in s and type(s[key]) is not dict:
                raise SchemaError(f"{key} must be an object")
        for key in ("prefixItems", "allOf", "anyOf", "oneOf"):
            if key in s and (type(s[key]) is not list or (key != "prefixItems" and not s[key])):
                raise SchemaError(f"{key} must be a non-empty list of schemas")
        if "items" in s and type(s["items"]) is list and not self.draft7:
            raise SchemaError("items is a schema in 2020-12 (a list of schemas is prefixItems)")
        patterns = [s["pattern"]] if "pattern" in s else []
        patterns += list((s.get("patternProperties") or {}).keys())
        for pattern in patterns:
            problem = matching.regex_problem(pattern, "pattern")
            if problem is not None:
                raise SchemaError(problem)
            self._patterns.add(pattern)

    def _check_refs(self, root: Any) -> None:
        stack = [root]
        while stack:
            schema = stack.pop()
            if type(schema) is not dict:
                continue
            for key in ("$ref", "$dynamicRef"):
                if key in schema:
                    self.resolve(schema[key])
            stack.extend(sub for _, sub in _subschemas(schema, self.draft7))

    def resolve(self, ref: Any) -> Any:
        """The subschema ``ref`` names in this document (``SchemaError`` if none)."""
        if type(ref) is not str:
            raise SchemaError(f"$ref must be a string, got {_clip(ref)}")
        base, _, frag = ref.partition("#")
        target: Any
        if base:
            root_id = self.root.get("$id") if type(self.root) is dict else None
            if type(root_id) is str and root_id.partition("#")[0] == base:
                target = self.root
            elif base in self.ids:
                target = self.ids[base]
            else:
                raise SchemaError(
                    f"$ref {ref!r} points outside the schema: mockmcp never fetches a schema "
                    "(basic/index.mdx), so it cannot validate against it; put the definition in $defs"
                )
        else:
            target = self.root
        frag = _percent_decode(frag)
        if not frag:
            return target
        if not frag.startswith("/"):
            if frag in self.anchors:
                return self.anchors[frag]
            raise SchemaError(f"$ref {ref!r}: no $anchor {frag!r} in the schema")
        node = target
        for part in frag[1:].split("/"):
            part = _unescape(part)
            if type(node) is dict and part in node:
                node = node[part]
            elif type(node) is list and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SchemaError(f"$ref {ref!r}: no such place in the schema")
        if type(node) is not dict and type(node) is not bool:
            raise SchemaError(f"$ref {ref!r} does not point at a schema")
        return node

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
        for key in ("$ref", "$dynamicRef"):
            if key in s:
                anyv.append(self._ref(self.resolve(s[key])))
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
            pattern = s["pattern"]
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
        patterns = [(p, self._compile(x)) for p, x in (s.get("patternProperties") or {}).items()]
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
        run = _Run(collect=False)
        try:
            if self._fast is None and self._eval(self.root, instance, (), run) is not None:
                return []
            run = _Run(collect=True)
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
            return self._keywords(schema, v, path, run)
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
            ann = self._eval(self.resolve(s["$ref"]), v, path, run)
            if ann is None:
                ok = False
            merge(ann)
            if self.draft7:
                return (props, items) if ok else None
        if "$dynamicRef" in s:
            ann = self._eval(self.resolve(s["$dynamicRef"]), v, path, run)
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
            if "pattern" in s and not matching.regex_search(s["pattern"], v):
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
                if matching.regex_search(pattern, key):
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


_compiled: dict[int, tuple[Any, Validator]] = {}


def validator_for(schema: dict[str, Any]) -> Validator:
    """The compiled validator of ``schema`` (compiled once per schema object; ``SchemaError`` if unusable)."""
    entry = _compiled.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _compiled[id(schema)] = (schema, Validator(schema))
    return entry[1]


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
