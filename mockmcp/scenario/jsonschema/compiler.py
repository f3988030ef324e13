"""The compiled checks: each schema object as one function ``instance -> valid?``.

Most calls pass, so a valid instance is decided here alone: a closure per schema
object, built once, that runs only the keywords the schema has, with no
annotations and no report (about half the evaluator's time on the tools of the
bundled scenarios, measured in docs/performance.md). A failure is explained by the
evaluator, which meets the same bounds; schemas whose verdict needs annotations
(``unevaluated*``), a dynamic scope or draft-07 are left to the evaluator alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from mockmcp.scenario import matching
from mockmcp.scenario.jsonschema.resources import SchemaDocument
from mockmcp.scenario.jsonschema.vocabulary import MAX_DEPTH, MAX_STEPS, NUMBER_BOUNDS, OverBudget, canon, multiple, type_ok

if TYPE_CHECKING:
    Check = Callable[[Any], bool]  # (a name for annotations only: building the alias costs import time)


def always(v: Any) -> bool:
    return True


def never(v: Any) -> bool:
    return False


_EXACT: dict[str, type] = {"string": str, "object": dict, "array": list, "boolean": bool}


def _type_check(t: type) -> Check:
    return lambda v: type(v) is t


# The check of a schema that is only an exact type, one function per type, and the type each
# one checks (an object's `declared` members test such a property inline).
_TYPE_CHECKS: dict[type, Check] = {t: _type_check(t) for t in _EXACT.values()}
_CHECKED_TYPE: dict[Check, type] = {f: t for t, f in _TYPE_CHECKS.items()}
_MISSING = object()


def _bound(test: Callable[[Any, Any], bool], b: Any) -> Check:
    return lambda v: test(v, b)


class CheckCompiler:
    """Builds the checks of one ``SchemaDocument`` (2020-12 without unevaluated* or a
    dynamic scope). ``budget`` counts the evaluations and the nesting of ``$ref``s in
    one call: whoever runs a check zeroes it first, and a check past ``MAX_STEPS`` or
    ``MAX_DEPTH`` raises ``OverBudget``."""

    def __init__(self, document: SchemaDocument) -> None:
        self.document = document
        self.budget = [0, 0]
        self.counts_refs = False  # (whether a check of this document counts on ``budget``)
        self._fns: dict[int, Check] = {}

    def compile(self, s: Any) -> Check:
        """``s`` as one function ``instance -> valid?``, built once per schema object."""
        if s is True:
            return always
        if s is False:
            return never
        known = self._fns.get(id(s))
        if known is not None:
            return known
        cell: list[Check] = []
        self._fns[id(s)] = lambda v: cell[0](v)  # a $ref back here during the build
        fn = self._build(s)
        cell.append(fn)
        self._fns[id(s)] = fn
        return fn

    def _build(self, s: dict[str, Any]) -> Check:
        doc = self.document
        anyv: list[Check] = []
        nums: list[Check] = []
        strs: list[Check] = []
        arrs: list[Check] = []
        objs: list[Check] = []
        if "$ref" in s:
            anyv.append(self._ref(doc.refs[id(s)]))
        if id(s) in doc.dynamic_refs:  # (only ones without a dynamic scope: see the entry module)
            anyv.append(self._ref(doc.dynamic_refs[id(s)][0]))
        exact: type | None = None
        if "type" in s:
            names = tuple(s["type"]) if type(s["type"]) is list else (s["type"],)
            if len(names) == 1 and names[0] in _EXACT:
                exact = _EXACT[names[0]]  # folded into the combined function (the commonest check)
            elif len(names) == 1:
                name = names[0]
                anyv.append(lambda v: type_ok(name, v))
            else:
                anyv.append(lambda v: any(type_ok(n, v) for n in names))
        if "const" in s:
            const = canon(s["const"])
            anyv.append(lambda v: canon(v) == const)
        if "enum" in s:
            allowed = [canon(e) for e in s["enum"]]
            anyv.append(lambda v: canon(v) in allowed)
        for key, test, _ in NUMBER_BOUNDS:
            if key in s:
                nums.append(_bound(test, s[key]))
        if "multipleOf" in s:
            m = s["multipleOf"]
            nums.append(lambda v: multiple(v, m))
        if "minLength" in s:
            low = s["minLength"]
            strs.append(lambda v: len(v) >= low)
        if "maxLength" in s:
            high = s["maxLength"]
            strs.append(lambda v: len(v) <= high)
        if "pattern" in s:
            pattern = doc.patterns[s["pattern"]]
            strs.append(lambda v: matching.regex_search(pattern, v))
        self._build_array(s, arrs)
        declared = self._build_object(s, objs)
        if "allOf" in s:
            subs = [self.compile(x) for x in s["allOf"]]
            anyv.append(lambda v: all(f(v) for f in subs))
        if "anyOf" in s:
            alts = [self.compile(x) for x in s["anyOf"]]
            anyv.append(lambda v: any(f(v) for f in alts))
        if "oneOf" in s:
            ones = [self.compile(x) for x in s["oneOf"]]
            anyv.append(lambda v: sum(1 for f in ones if f(v)) == 1)
        if "not" in s:
            neg = self.compile(s["not"])
            anyv.append(lambda v: not neg(v))
        if "if" in s:
            cond = self.compile(s["if"])
            then = self.compile(s.get("then", True))
            other = self.compile(s.get("else", True))
            anyv.append(lambda v: then(v) if cond(v) else other(v))
        if declared is not None and exact is dict and objs == [declared] and not (anyv or nums or strs or arrs):
            return declared  # (it tests the type itself: the common tool schema costs one call)
        return combine(exact, anyv, nums, strs, arrs, objs)

    def _ref(self, target: Any) -> Check:
        fn = self.compile(target)
        budget = self.budget
        self.counts_refs = True

        def ref(v: Any) -> bool:
            budget[0] += 1
            budget[1] += 1
            try:
                if budget[0] > MAX_STEPS or budget[1] > MAX_DEPTH:
                    raise OverBudget("over budget")
                return fn(v)
            finally:
                budget[1] -= 1

        return ref

    def _build_array(self, s: dict[str, Any], arrs: list[Check]) -> None:
        if "minItems" in s:
            low = s["minItems"]
            arrs.append(lambda v: len(v) >= low)
        if "maxItems" in s:
            high = s["maxItems"]
            arrs.append(lambda v: len(v) <= high)
        if s.get("uniqueItems") is True:
            arrs.append(lambda v: len({canon(x) for x in v}) == len(v))
        prefix = [self.compile(x) for x in s.get("prefixItems", ())]
        if prefix:
            arrs.append(lambda v: all(f(x) for f, x in zip(prefix, v)))
        if "items" in s:
            rest = self.compile(s["items"])
            start = len(prefix)
            arrs.append(lambda v: all(rest(x) for x in v[start:]))
        if "contains" in s:
            has = self.compile(s["contains"])
            low_c = s.get("minContains", 1)
            high_c = s.get("maxContains")
            arrs.append(lambda v: low_c <= sum(1 for x in v if has(x)) <= (len(v) if high_c is None else high_c))

    def _build_object(self, s: dict[str, Any], objs: list[Check]) -> Check | None:
        """Appends the object keywords' checks to ``objs``; returns the one that checks the
        declared properties when there is one (it also tests that the instance is an object,
        so it can stand for the whole schema)."""
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
            schemas = [(k, self.compile(x)) for k, x in s["dependentSchemas"].items()]
            objs.append(lambda v: all(f(v) for k, f in schemas if k in v))
        if "propertyNames" in s:
            names = self.compile(s["propertyNames"])
            objs.append(lambda v: all(names(k) for k in v))
        props = {k: self.compile(x) for k, x in (s.get("properties") or {}).items()}
        patterns = [(self.document.patterns[p], self.compile(x)) for p, x in (s.get("patternProperties") or {}).items()]
        extra = self.compile(s["additionalProperties"]) if "additionalProperties" in s else None
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
                if type(v) is not dict:
                    return False
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
            return declared
        return None


def combine(exact: type | None, anyv: list[Check], nums: list[Check], strs: list[Check],
            arrs: list[Check], objs: list[Check]) -> Check:
    """One function running the checks that apply to the instance's JSON type (``exact``:
    the one type the schema allows, if it names one of ``_EXACT``'s)."""
    by_type: dict[type, tuple[Check, ...]] = {}
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
