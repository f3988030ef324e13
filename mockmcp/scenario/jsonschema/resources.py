"""The schema document: its resources, anchors and base URIs, and its references resolved.

``$ref`` and ``$dynamicRef`` are resolved as RFC 3986 says against the base URI of
the schema resource they are written in (an ``$id`` starts one; ``urn:`` too): to a
resource of the document, a JSON pointer within it, or an ``$anchor`` /
``$dynamicAnchor`` of that resource. Anything outside the document, above all a
network URI, is a ``SchemaError``: it is never fetched (basic/index.mdx), and an
unresolved reference is refused rather than treated as permissive. So are the
dialects' metaschemas and custom vocabularies (documents mockmcp does not carry).

Everything here is done once, when the schema is compiled: the walk of every
subschema (at most ``MAX_SUBSCHEMAS``), the checks of keyword values, and the
translation of each ``pattern`` into the Python regex that matches like it (through
``matching``'s bounded regexes: a pattern whose matching time cannot be bounded is a
``SchemaError``). What stays for validation time is the dynamic scope a
``$dynamicRef`` searches (``dynamic_target``).
"""

from __future__ import annotations

import json
from typing import Any

from mockmcp.scenario import matching
from mockmcp.scenario.jsonschema.vocabulary import (
    DIALECT_07,
    DIALECT_2020,
    MAX_SUBSCHEMAS,
    SchemaError,
    check_values,
    clip,
    dialect_of,
    subschemas,
)


class SchemaDocument:
    """One schema (``root``) indexed for validation; ``SchemaError`` if it cannot be used.

    ``default_dialect`` is the dialect of a schema without ``$schema``."""

    def __init__(self, schema: Any, default_dialect: str = DIALECT_2020) -> None:
        self.root = schema
        self.draft7 = dialect_of(schema, default_dialect) == DIALECT_07
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
        self.patterns: dict[str, str] = {}  # a schema's pattern -> the Python regex that matches like it
        self.uses_unevaluated = False
        self._count = 0
        self._pending: list[tuple[dict[str, Any], str]] = []
        self._index(schema, "")
        self._resolve_pending()
        # Whether some $dynamicRef is decided by the dynamic scope (then only the evaluator can).
        self.uses_dynamic_scope = any(name is not None for _, name in self.dynamic_refs.values())

    def dynamic_target(self, s: dict[str, Any], scope: list[str] | None) -> Any:
        """Where the ``$dynamicRef`` of ``s`` leads within the dynamic ``scope`` (the
        resources entered so far, outermost first): its static target, unless that bears
        the ``$dynamicAnchor`` it names; then the outermost resource of the scope that has
        a ``$dynamicAnchor`` of that name."""
        target, name = self.dynamic_refs[id(s)]
        if name is not None and scope is not None:
            for resource in scope:
                found = self.dynamic_anchors.get((resource, name))
                if found is not None:
                    return found
        return target

    def _own_id(self, schema: dict[str, Any]) -> Any:
        """The ``$id`` that applies to ``schema`` (draft-07 ignores every sibling of ``$ref``)."""
        if self.draft7 and "$ref" in schema:
            return None
        return schema.get("$id")

    def _index(self, top: Any, top_base: str, *, from_root: bool = True) -> None:
        """Walk the subschemas below ``top`` (whose enclosing base URI is ``top_base``):
        check keyword values, register resources and anchors, queue references. A refusal
        names the subschema's place when the walk started at the root (``from_root``)."""
        stack: list[tuple[Any, str, tuple[Any, ...]]] = [(top, top_base, ())]
        while stack:
            schema, base, path = stack.pop()
            try:
                self._index_one(schema, base, path, stack)
            except SchemaError as exc:
                if from_root and not exc.path:
                    exc.path = path
                raise

    def _index_one(self, schema: Any, base: str, path: tuple[Any, ...], stack: list[tuple[Any, str, tuple[Any, ...]]]) -> None:
        """One subschema of ``_index``'s walk, its subschemas pushed on ``stack``."""
        self._count += 1
        if self._count > MAX_SUBSCHEMAS:
            raise SchemaError(f"the schema has more than {MAX_SUBSCHEMAS} subschemas")
        if type(schema) is bool:
            return
        if type(schema) is not dict:
            raise SchemaError(f"a schema is an object or a boolean, not {clip(schema)}")
        if id(schema) in self.base:
            return  # the same object reached twice (a YAML alias): indexed already
        sid = self._own_id(schema)
        if sid is not None:
            if type(sid) is not str:
                raise SchemaError(f"$id must be a string, got {clip(sid)}")
            from mockmcp.scenario.jsonschema.uris import join, percent_decode  # only for schemas with $id

            uri, _, frag = sid.partition("#")
            if uri:
                base = join(base, uri)
                self.resources.setdefault(base, schema)
            if frag and self.draft7:
                self.anchors[(base, percent_decode(frag))] = schema
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
        check_values(schema, self.draft7)
        self._check_patterns(schema)
        if "unevaluatedItems" in schema or "unevaluatedProperties" in schema:
            self.uses_unevaluated = True
        stack.extend((sub, base, path + at) for at, sub in subschemas(schema, self.draft7))

    def _check_patterns(self, s: dict[str, Any]) -> None:
        """Translate and check ``pattern`` and the names of ``patternProperties``."""
        patterns = [s["pattern"]] if "pattern" in s else []
        patterns += list((s.get("patternProperties") or {}).keys())
        for pattern in patterns:
            if type(pattern) is str and pattern not in self.patterns:
                python = pattern
                if "\\p{" in pattern or "\\P{" in pattern:
                    from mockmcp.scenario.jsonschema.ecmaregex import python_regex  # only for such patterns

                    python = python_regex(pattern)
                self.patterns[pattern] = python
            python = self.patterns.get(pattern, pattern)
            problem = matching.regex_problem(python, "pattern")
            if problem is not None:
                if python != pattern:  # name the pattern as written, not its translation
                    problem = problem.replace(json.dumps(python, ensure_ascii=False), json.dumps(pattern, ensure_ascii=False))
                raise SchemaError(problem)

    def _resolve_pending(self) -> None:
        """Resolve every queued reference; one that lands outside the walked subschemas
        (``#/properties/a/x-unknown``) has that place walked, which may queue more."""
        if not self._pending:
            return
        from mockmcp.scenario.jsonschema.uris import join, percent_decode  # only for schemas with references

        while self._pending:
            schema, base = self._pending.pop()
            if "$ref" in schema:
                self.refs[id(schema)] = self._locate(schema["$ref"], base, "$ref")
            if "$dynamicRef" in schema and not self.draft7:
                ref = schema["$dynamicRef"]
                target = self._locate(ref, base, "$dynamicRef")
                name: str | None = None
                uri, _, frag = join(base, ref).partition("#")
                frag = percent_decode(frag)
                if frag and not frag.startswith("/") and self.dynamic_anchors.get((uri, frag)) is target:
                    name = frag  # bookended: the dynamic scope decides
                self.dynamic_refs[id(schema)] = (target, name)

    def _locate(self, ref: Any, base: str, key: str) -> Any:
        """The subschema ``ref`` names, resolved against ``base`` (``SchemaError`` if none)."""
        from mockmcp.scenario.jsonschema.uris import join, percent_decode, unescape_step

        if type(ref) is not str:
            raise SchemaError(f"{key} must be a string, got {clip(ref)}")
        uri, _, frag = join(base, ref).partition("#")
        target = self.resources.get(uri)
        if target is None:
            raise SchemaError(
                f"{key} {ref!r} points outside the schema: mockmcp never fetches a schema "
                "(basic/index.mdx), so it cannot validate against it; put the definition in $defs"
            )
        frag = percent_decode(frag)
        if not frag:
            return target
        if not frag.startswith("/"):
            if (uri, frag) in self.anchors:
                return self.anchors[(uri, frag)]
            raise SchemaError(f"{key} {ref!r}: no $anchor {frag!r} in the schema")
        node, node_base, parent_base = target, uri, uri
        for part in frag[1:].split("/"):
            part = unescape_step(part)
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
                    node_base = join(node_base, sid.partition("#")[0])
        if type(node) is not dict and type(node) is not bool:
            raise SchemaError(f"{key} {ref!r} does not point at a schema")
        if type(node) is dict and id(node) not in self.base:
            self._index(node, parent_base, from_root=False)  # a place the walk did not reach (below an unknown keyword)
        return node
