"""The evaluator: it explains why an instance fails, and decides alone where the
compiled checks cannot.

It walks the schema as the specification reads it, keyword by keyword, reporting
each place the instance breaks (at most ``MAX_REPORTED``) and collecting the
annotations of passing subschemas that ``unevaluatedItems``/``unevaluatedProperties``
need; it follows a ``$dynamicRef`` through the dynamic scope, and reads draft-07
(``items`` as a list, ``additionalItems``, ``dependencies``, ``$ref`` overriding its
siblings). ``format`` is an annotation (2020-12's default). A ``$ref`` cycle that does
not descend into the instance ends at ``MAX_DEPTH``; a costly schema at ``MAX_STEPS``.
Imported only when a call fails its compiled checks or a schema needs it.
"""

from __future__ import annotations

from typing import Any

from mockmcp.scenario import matching
from mockmcp.scenario.jsonschema.containers import array, object_
from mockmcp.scenario.jsonschema.resources import SchemaDocument
from mockmcp.scenario.jsonschema.runs import EMPTY, Annotations, Run
from mockmcp.scenario.jsonschema.vocabulary import (
    MAX_DEPTH,
    MAX_REPORTED,
    MAX_STEPS,
    NUMBER_BOUNDS,
    OverBudget,
    at,
    canon,
    clip,
    multiple,
    type_ok,
)


class Evaluator:
    """Evaluates instances against one ``SchemaDocument``."""

    def __init__(self, document: SchemaDocument) -> None:
        self.document = document
        self.draft7 = document.draft7
        self.patterns = document.patterns

    def errors(self, instance: Any, known_invalid: bool) -> list[str]:
        """Where ``instance`` breaks the schema (``[]``: valid). ``known_invalid``: the
        compiled checks said it fails (or ran out of budget), so only the report is left."""
        doc = self.document
        scope: list[str] | None = [] if doc.dynamic_refs else None
        run = Run(collect=False, scope=scope)
        try:
            if not known_invalid and self.eval(doc.root, instance, (), run) is not None:
                return []
            run = Run(collect=True, scope=scope)
            self.eval(doc.root, instance, (), run)
        except OverBudget as exc:
            return [str(exc)]
        assert run.errors is not None
        return run.errors[:MAX_REPORTED] or ["$: does not match the schema"]

    def quiet(self, schema: Any, v: Any, path: tuple[Any, ...], run: Run) -> Annotations | None:
        """Evaluate without reporting (a branch of anyOf, oneOf, not, if, contains)."""
        saved = run.errors
        run.errors = None
        try:
            return self.eval(schema, v, path, run)
        finally:
            run.errors = saved

    def sub(self, schema: Any, v: Any, path: tuple[Any, ...], run: Run, why: str) -> Annotations | None:
        """Evaluate a subschema that a ``false`` may stand for ("not allowed here")."""
        if schema is False:
            run.fail(path, f"is not allowed ({why})")
            return None
        return self.eval(schema, v, path, run)

    def eval(self, schema: Any, v: Any, path: tuple[Any, ...], run: Run) -> Annotations | None:
        """Evaluate ``schema`` on ``v``, reporting what fails (``None``) or the annotations."""
        if schema is True:
            return EMPTY
        if schema is False:
            run.fail(path, "no value is allowed here")
            return None
        run.steps += 1
        if run.steps > MAX_STEPS:
            raise OverBudget(f"{at(path)}: validation stopped after {MAX_STEPS} evaluations (the schema is too costly for these arguments)")
        run.depth += 1
        try:
            if run.depth > MAX_DEPTH:
                raise OverBudget(f"{at(path)}: validation nests deeper than {MAX_DEPTH} ($ref cycle?)")
            scope = run.scope
            if scope is None:
                return self._keywords(schema, v, path, run)
            resource = self.document.base.get(id(schema))  # (every walked subschema has one)
            if resource is None or (scope and scope[-1] == resource):
                return self._keywords(schema, v, path, run)
            scope.append(resource)
            try:
                return self._keywords(schema, v, path, run)
            finally:
                scope.pop()
        finally:
            run.depth -= 1

    def _keywords(self, s: dict[str, Any], v: Any, path: tuple[Any, ...], run: Run) -> Annotations | None:
        doc = self.document
        ok = True
        props: set[str] = set()
        items: set[int] = set()

        def merge(ann: Annotations | None) -> None:
            if ann is not None:
                props.update(ann[0])
                items.update(ann[1])

        if "$ref" in s:
            ann = self.eval(doc.refs[id(s)], v, path, run)
            if ann is None:
                ok = False
            merge(ann)
            if self.draft7:
                return (props, items) if ok else None
        if id(s) in doc.dynamic_refs:
            ann = self.eval(doc.dynamic_target(s, run.scope), v, path, run)
            if ann is None:
                ok = False
            merge(ann)
        tv = type(v)
        # ---- any instance
        if "type" in s:
            t = s["type"]
            names = t if type(t) is list else (t,)
            if not any(type_ok(n, v) for n in names):
                run.fail(path, f"{clip(v)} is not of type {' or '.join(names)}")
                ok = False
        if "const" in s and canon(v) != canon(s["const"]):
            run.fail(path, f"{clip(v)} is not {clip(s['const'])}")
            ok = False
        if "enum" in s:
            cv = canon(v)
            if not any(cv == canon(e) for e in s["enum"]):
                run.fail(path, f"{clip(v)} is not one of {clip(s['enum'])}")
                ok = False
        # ---- numbers
        if tv is int or tv is float:
            ok = number(s, v, path, run) and ok
        # ---- strings
        elif tv is str:
            n = len(v)
            if "minLength" in s and n < s["minLength"]:
                run.fail(path, f"{clip(v)} is shorter than {int(s['minLength'])} characters")
                ok = False
            if "maxLength" in s and n > s["maxLength"]:
                run.fail(path, f"{clip(v)} is longer than {int(s['maxLength'])} characters")
                ok = False
            if "pattern" in s and not matching.regex_search(self.patterns[s["pattern"]], v):
                run.fail(path, f"{clip(v)} does not match pattern {s['pattern']!r}")
                ok = False
        # ---- arrays
        # (their annotations count for this object's unevaluated* even when it fails: the
        # result fails anyway, and the report names only what is wrong)
        elif tv is list:
            ok = array(self, s, v, path, run, items) and ok
        # ---- objects
        elif tv is dict:
            ok = object_(self, s, v, path, run, props) and ok
        # ---- applicators on any instance
        if "allOf" in s:
            for sub in s["allOf"]:
                ann = self.eval(sub, v, path, run)
                if ann is None:
                    ok = False
                merge(ann)
        if "anyOf" in s:
            found = False
            for sub in s["anyOf"]:
                ann = self.quiet(sub, v, path, run)
                if ann is not None:
                    found = True
                    merge(ann)  # every passing branch annotates
            if not found:
                run.fail(path, "does not match any schema of anyOf")
                ok = False
        if "oneOf" in s:
            passing = []
            for sub in s["oneOf"]:
                ann = self.quiet(sub, v, path, run)
                if ann is not None:
                    passing.append(ann)
            if len(passing) != 1:
                run.fail(path, f"matches {len(passing)} schemas of oneOf, not exactly one")
                ok = False
            else:
                merge(passing[0])
        if "not" in s and self.quiet(s["not"], v, path, run) is not None:
            run.fail(path, "matches the schema of not")
            ok = False
        if "if" in s:
            cond = self.quiet(s["if"], v, path, run)
            branch = s.get("then") if cond is not None else s.get("else")
            merge(cond)
            if branch is not None:
                ann = self.eval(branch, v, path, run)
                if ann is None:
                    ok = False
                merge(ann)
        # ---- unevaluated (after every other keyword of this schema object)
        if tv is list and "unevaluatedItems" in s:
            for i, item in enumerate(v):
                if i not in items:
                    if self.sub(s["unevaluatedItems"], item, path + (i,), run, "unevaluatedItems") is None:
                        ok = False
                    items.add(i)
        if tv is dict and "unevaluatedProperties" in s:
            for key, value in v.items():
                if key not in props:
                    if self.sub(s["unevaluatedProperties"], value, path + (key,), run, "unevaluatedProperties") is None:
                        ok = False
                    props.add(key)
        return (props, items) if ok else None


def number(s: dict[str, Any], v: int | float, path: tuple[Any, ...], run: Run) -> bool:
    """Whether the number ``v`` meets the numeric keywords of ``s``, reporting each it breaks."""
    ok = True
    for key, within, word in NUMBER_BOUNDS:
        if key in s and not within(v, s[key]):
            run.fail(path, f"{clip(v)} is {word} {s[key]}")
            ok = False
    if "multipleOf" in s and not multiple(v, s["multipleOf"]):
        run.fail(path, f"{clip(v)} is not a multiple of {s['multipleOf']}")
        ok = False
    return ok
