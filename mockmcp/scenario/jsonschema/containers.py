"""The evaluator's keywords of arrays and objects: each assertion reported where it
fails, each applicator evaluating its subschemas through the evaluator (``Evaluates``),
and the indices and names they evaluate collected for ``unevaluated*``.
"""

from __future__ import annotations

from typing import Any

from mockmcp.scenario import matching
from mockmcp.scenario.jsonschema.runs import Evaluates, Run
from mockmcp.scenario.jsonschema.vocabulary import canon


def array(ev: Evaluates, s: dict[str, Any], v: list[Any], path: tuple[Any, ...], run: Run, evaluated: set[int]) -> bool:
    """Whether the array ``v`` meets the array keywords of ``s`` (``evaluated``: gains the indices evaluated)."""
    ok = True
    n = len(v)
    if "minItems" in s and n < s["minItems"]:
        run.fail(path, f"has {n} items, fewer than {int(s['minItems'])}")
        ok = False
    if "maxItems" in s and n > s["maxItems"]:
        run.fail(path, f"has {n} items, more than {int(s['maxItems'])}")
        ok = False
    if s.get("uniqueItems") is True:
        seen = set()
        for i, item in enumerate(v):
            c = canon(item)
            if c in seen:
                run.fail(path + (i,), "repeats an earlier item (uniqueItems)")
                ok = False
                break
            seen.add(c)
    prefix: Any = s.get("prefixItems")
    rest: Any = s.get("items")
    if ev.draft7:
        if type(rest) is list:
            prefix, rest = rest, s.get("additionalItems")
        else:
            prefix = None
    for i, sub in enumerate(prefix or ()):
        if i >= n:
            break
        if ev.eval(sub, v[i], path + (i,), run) is None:
            ok = False
        evaluated.add(i)
    if rest is not None:
        start = len(prefix or ())
        for i in range(start, n):
            if ev.sub(rest, v[i], path + (i,), run, "no items past the prefix") is None:
                ok = False
            evaluated.add(i)
    if "contains" in s:
        matched = [i for i, item in enumerate(v) if ev.quiet(s["contains"], item, path + (i,), run) is not None]
        low = s.get("minContains", 1)
        if len(matched) < low:
            run.fail(path, f"has {len(matched)} items matching contains, fewer than {int(low)}")
            ok = False
        if "maxContains" in s and len(matched) > s["maxContains"]:
            run.fail(path, f"has {len(matched)} items matching contains, more than {int(s['maxContains'])}")
            ok = False
        if not ev.draft7:
            evaluated.update(matched)
    return ok


def object_(ev: Evaluates, s: dict[str, Any], v: dict[str, Any], path: tuple[Any, ...], run: Run, evaluated: set[str]) -> bool:
    """Whether the object ``v`` meets the object keywords of ``s`` (``evaluated``: gains the names evaluated)."""
    ok = True
    n = len(v)
    if "minProperties" in s and n < s["minProperties"]:
        run.fail(path, f"has {n} properties, fewer than {int(s['minProperties'])}")
        ok = False
    if "maxProperties" in s and n > s["maxProperties"]:
        run.fail(path, f"has {n} properties, more than {int(s['maxProperties'])}")
        ok = False
    for key in s.get("required", ()):
        if key not in v:
            run.fail(path, f"required property {key!r} is missing")
            ok = False
    for key, needs in (s.get("dependentRequired") or {}).items():
        if key in v:
            for other in needs:
                if other not in v:
                    run.fail(path, f"property {other!r} is required when {key!r} is present")
                    ok = False
    dependencies = s.get("dependencies") if ev.draft7 else None
    for key, dep in (dependencies or {}).items():
        if key in v:
            if type(dep) is list:
                for other in dep:
                    if other not in v:
                        run.fail(path, f"property {other!r} is required when {key!r} is present")
                        ok = False
            elif ev.eval(dep, v, path, run) is None:
                ok = False
    for key, sub in (s.get("dependentSchemas") or {}).items():
        if key in v:
            ann = ev.eval(sub, v, path, run)
            if ann is None:
                ok = False
            else:
                evaluated.update(ann[0])
    return _members(ev, s, v, path, run, evaluated) and ok


def _members(ev: Evaluates, s: dict[str, Any], v: dict[str, Any], path: tuple[Any, ...], run: Run, evaluated: set[str]) -> bool:
    """propertyNames, properties, patternProperties and additionalProperties, member by member."""
    ok = True
    properties = s.get("properties") or {}
    patterns = s.get("patternProperties") or {}
    additional = s.get("additionalProperties")
    names = s.get("propertyNames")
    translated = ev.patterns
    for key, value in v.items():
        if names is not None and ev.quiet(names, key, path, run) is None:
            run.fail(path, f"property name {key!r} does not match propertyNames")
            ok = False
        covered = False
        if key in properties:
            covered = True
            if ev.eval(properties[key], value, path + (key,), run) is None:
                ok = False
        for pattern, sub in patterns.items():
            if matching.regex_search(translated[pattern], key):
                covered = True
                if ev.eval(sub, value, path + (key,), run) is None:
                    ok = False
        if not covered and additional is not None:
            if ev.sub(additional, value, path + (key,), run, "additionalProperties") is None:
                ok = False
            covered = True
        if covered:
            evaluated.add(key)
    return ok
