"""The plain load path: PyYAML with marks and the strict cattrs converter.

Every problem a scenario file can have at the YAML or type level is found and
located here: YAML 1.2 core schema (``yes``/``on`` are strings, ``2026-07-28`` is a
string, not a date), duplicate keys and non-string keys are errors, aliases may not
expand beyond a bound (no billion laughs), and one cattrs converter structures the
data without coercion (``3`` is not a string). Each problem becomes a ``Problem``
with file, line, column and JSON path.

``loader`` runs it when the fast path (``quickload``) declines a file or finds a
problem, and only then: importing yaml and cattrs and generating the converter's
code is most of a cold spawn's own cost. It is also the reference the fast path is
checked against, so it imports nothing from it: the scalar rules both read by
(core-schema resolvers, scalar conversion, durations, limits) are in ``scalars``.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union, cast

import attrs
import cattrs
import yaml
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, override

from mockmcp.scenario.model import base as model
from mockmcp.scenario.model.catalog import STEP_KEYS, Step
from mockmcp.scenario.problems import LoadError, Problem, did_you_mean
from mockmcp.scenario.scalars import CORE_SCHEMA, MAX_DEPTH, Refused, acceptor, parse_duration, scalar
from mockmcp.scenario.scalars import STR as _STR
from mockmcp.scenario.scalars import show as _show

MAX_ALIAS_NODES = 100_000
# ------------------------------------------------------------------ YAML


try:
    _BaseLoader: type = yaml.CSafeLoader  # libyaml parser when present (faster)
except AttributeError:  # pragma: no cover - pure-Python PyYAML
    _BaseLoader = yaml.SafeLoader


class _CoreSchemaLoader(_BaseLoader):  # type: ignore[misc]
    """SafeLoader with YAML 1.2 core-schema implicit typing."""


_CoreSchemaLoader.yaml_implicit_resolvers = {}
for _tag, _regexp, _first in CORE_SCHEMA:
    _CoreSchemaLoader.add_implicit_resolver(_tag, _regexp, list(_first))

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"

Positions = dict[tuple[Any, ...], tuple[int, int]]


class _Builder:
    """Turn a composed YAML node tree into plain data, remembering positions."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.positions: Positions = {}
        self.alias_nodes = 0
        self._seen: dict[int, int] = {}
        self._active: set[int] = set()

    def fail(self, node: yaml.Node, message: str, path: tuple[Any, ...]) -> LoadError:
        m = node.start_mark
        return LoadError([Problem(self.filename, m.line + 1, m.column + 1, message, path)])

    def build(self, node: yaml.Node, path: tuple[Any, ...] = ()) -> Any:
        if len(path) > MAX_DEPTH:
            raise self.fail(node, f"nested more than {MAX_DEPTH} levels deep", path)
        key = id(node)
        if key in self._active:
            raise self.fail(node, "recursive alias", path)
        if key in self._seen:
            self.alias_nodes += self._seen[key]
            if self.alias_nodes > MAX_ALIAS_NODES:
                raise self.fail(
                    node, f"aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb?)", path
                )
        m = node.start_mark
        self.positions.setdefault(path, (m.line + 1, m.column + 1))
        self._active.add(key)
        try:
            before = len(self.positions)
            value = self._build(node, path)
            self._seen.setdefault(key, max(1, len(self.positions) - before + 1))
            return value
        finally:
            self._active.discard(key)

    def _build(self, node: yaml.Node, path: tuple[Any, ...]) -> Any:
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            try:
                return scalar(tag, node.value)
            except Refused as exc:
                raise self.fail(node, str(exc), path) from None
        if isinstance(node, yaml.SequenceNode):
            if tag != _SEQ:
                raise self.fail(node, f"unsupported YAML tag {tag}", path)
            return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            if tag != _MAP:
                raise self.fail(node, f"unsupported YAML tag {tag}", path)
            out: dict[str, Any] = {}
            for knode, vnode in node.value:
                if knode.tag == "tag:yaml.org,2002:merge":
                    raise self.fail(knode, "merge keys (<<) are not supported", path)
                if not isinstance(knode, yaml.ScalarNode) or knode.tag != _STR:
                    shown = knode.value if isinstance(knode, yaml.ScalarNode) else "a collection"
                    raise self.fail(knode, f"mapping keys must be strings, got {shown!r}", path)
                k = knode.value
                if k in out:
                    first = self.positions.get(path + (k,), ("?", "?"))
                    raise self.fail(
                        knode, f"duplicate key {k!r} (first defined at line {first[0]})", path + (k,)
                    )
                km = knode.start_mark
                self.positions[path + (k,)] = (km.line + 1, km.column + 1)
                out[k] = self.build(vnode, path + (k,))
            return out
        raise self.fail(node, "unsupported YAML node", path)  # pragma: no cover


_TAB_INDENT = "tab character in indentation; YAML indents with spaces"


def _syntax_problem(text: str, exc: yaml.MarkedYAMLError, filename: str) -> Problem:
    """A YAML syntax error, said plainly where PyYAML's words mislead (a tab in the
    indentation reads "found character that cannot start any token")."""
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return Problem(filename, 1, 1, f"YAML syntax error: {exc}", ())
    lines = text.splitlines()
    row = lines[mark.line] if mark.line < len(lines) else ""
    indent = row[: len(row) - len(row.lstrip(" \t"))]
    if "\t" in indent and mark.column <= len(indent):
        return Problem(filename, mark.line + 1, indent.index("\t") + 1, _TAB_INDENT, ())
    msg = " ".join(str(x) for x in (exc.context, exc.problem) if x)
    return Problem(filename, mark.line + 1, mark.column + 1, f"YAML syntax error: {msg}", ())


def parse_yaml(text: str, filename: str) -> tuple[Any, Positions]:
    """Parse YAML text into plain JSON-like data plus a path -> (line, col) map."""
    try:
        node = yaml.compose(text, Loader=_CoreSchemaLoader)
    except yaml.MarkedYAMLError as exc:
        raise LoadError([_syntax_problem(text, exc, filename)]) from None
    except RecursionError:
        # PyYAML's pure-Python composer recurses per level (libyaml stops at 1000 itself)
        raise LoadError([Problem(filename, 1, 1, f"nested more than {MAX_DEPTH} levels deep", ())]) from None
    except yaml.YAMLError as exc:
        raise LoadError([Problem(filename, 1, 1, f"YAML error: {exc}", ())]) from None
    if node is None:
        raise LoadError([Problem(filename, 1, 1, "the file is empty", ())])
    builder = _Builder(filename)
    data = builder.build(node)
    return data, builder.positions


# ------------------------------------------------------------------ cattrs

def _strict(kind: type, accept: tuple[type, ...], name: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if type(value) not in accept:
            raise TypeError(f"expected {name}, got {_show(value)}")
        return kind(value)

    return hook


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if tp is str:
        return "a string"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is bool:
        return "a boolean"
    if tp is type(None):
        return "null"
    if origin is list:
        return "a list"
    if origin is dict or attrs.has(tp):
        return "a mapping" if tp is not model.Duration else "a duration"
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(tp))
    return str(tp)


def _accepts(tp: Any, value: Any) -> bool:
    return acceptor(tp)(value)


def _origin(tp: Any) -> Any:
    """``typing.get_origin`` typed loosely: its overloads make ``is`` checks look impossible to mypy."""
    return typing.get_origin(tp)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


_STRUCTURE_ERRORS = (ClassValidationError, IterableValidationError, ForbiddenExtraKeysError, TypeError, ValueError, KeyError)


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _strict(str, (str,), "a string"))
    conv.register_structure_hook(int, _strict(int, (int,), "an integer"))
    conv.register_structure_hook(float, _strict(float, (int, float), "a number"))
    conv.register_structure_hook(bool, _strict(bool, (bool,), "a boolean"))
    conv.register_structure_hook(model.Duration, lambda v, _: parse_duration(v))

    def structure_literal(value: Any, tp: Any) -> Any:
        if not _accepts(tp, value):
            raise ValueError(f"expected {_type_name(tp)}, got {_show(value)}")
        return value

    conv.register_structure_hook_func(lambda t: _origin(t) is Literal, structure_literal)

    def structure_list(value: Any, tp: Any) -> Any:
        if type(value) is not list:
            raise TypeError(f"expected a list, got {_show(value)}")
        (item,) = typing.get_args(tp) or (Any,)
        if item is Any:
            return value
        errors = []
        out = []
        for i, v in enumerate(value):
            try:
                out.append(conv.structure(v, item))
            except _STRUCTURE_ERRORS as exc:  # collected and re-raised as one group below
                exc.__notes__ = [*getattr(exc, "__notes__", []), IterableValidationNote(f"index {i}", i, item)]
                errors.append(exc)
        if errors:
            raise IterableValidationError("while structuring a list", errors, tp)
        return out

    conv.register_structure_hook_func(lambda t: _origin(t) is list, structure_list)

    def structure_dict(value: Any, tp: Any) -> Any:
        if type(value) is not dict:
            raise TypeError(f"expected a mapping, got {_show(value)}")
        return value

    conv.register_structure_hook_func(lambda t: _origin(t) is dict, structure_dict)

    def structure_step(value: Any, _: Any) -> Any:
        if type(value) is not dict or not value:
            raise TypeError(f"expected a step (a mapping with one of {', '.join(STEP_KEYS)}), got {_show(value)}")
        kinds = [k for k in value if k in STEP_KEYS]
        if len(kinds) != 1:
            if not kinds:
                raise ValueError(_unknown_step(list(value)))
            raise ValueError(f"a step has exactly one kind, found {', '.join(kinds)}")
        return conv.structure(value, STEP_KEYS[kinds[0]])

    def structure_union(value: Any, tp: Any) -> Any:
        if tp == Step:
            return structure_step(value, tp)
        for arg in typing.get_args(tp):
            if _accepts(arg, value):
                return value if arg is Any or arg is type(None) else conv.structure(value, arg)
        names = " or ".join(_type_name(a) for a in typing.get_args(tp))
        raise TypeError(f"expected {names}, got {_show(value)}")

    conv.register_structure_hook_func(_is_union, structure_union)

    def attrs_factory(cls: type) -> Any:
        overrides: dict[str, Any] = {
            f.name: override(rename=f.metadata["key"]) for f in attrs.fields(cls) if "key" in f.metadata
        }
        fn: Callable[[Any, Any], Any] = make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True, **overrides)

        def hook(value: Any, tp: Any) -> Any:
            if type(value) is not dict:
                raise TypeError(f"expected a mapping, got {_show(value)}")
            return fn(value, tp)

        return hook

    conv.register_structure_hook_factory(attrs.has, attrs_factory)

    # Equal `when` blocks become one shared (frozen) Match: generated and copied
    # scenarios repeat them thousands of times, and the load cache then stores and
    # restores each distinct one once.
    match_hook = conv.get_structure_hook(model.Match)
    matches = _SHARED_MATCHES

    def structure_match(value: Any, tp: Any) -> model.Match:
        try:
            key = json.dumps(value, sort_keys=True)
        except (TypeError, ValueError):
            return cast(model.Match, match_hook(value, tp))
        found = matches.get(key)
        if found is None:
            found = matches[key] = match_hook(value, tp)
        return found

    conv.register_structure_hook(model.Match, structure_match)
    return conv


_converter: cattrs.Converter | None = None
_SHARED_MATCHES: dict[str, model.Match] = {}  # per load: cleared by structure()


def converter() -> cattrs.Converter:
    global _converter
    if _converter is None:
        _converter = make_converter()
    return _converter


def _unknown_step(keys: list[str]) -> str:
    """Suggest the closest step kind; list them all only when none is close."""
    for key in keys:
        hint = did_you_mean(key, STEP_KEYS)
        if hint:
            return f"unknown step {key!r}{hint}"
    return f"unknown step {', '.join(map(repr, keys))}: expected one of {', '.join(STEP_KEYS)}"


def _yaml_keys(cls: Any) -> list[str]:
    return [f.metadata.get("key", f.name) for f in attrs.fields(cls)] if attrs.has(cls) else []


def _yaml_key(cls: Any, name: str) -> str:
    if attrs.has(cls):
        for f in attrs.fields(cls):
            if f.name == name:
                return str(f.metadata.get("key", name))
    return name


def _flatten(exc: BaseException, path: tuple[Any, ...], out: list[tuple[tuple[Any, ...], str]]) -> None:
    if isinstance(exc, ClassValidationError):
        with_notes, others = exc.group_exceptions()
        for sub, note in with_notes:
            _flatten(sub, path + (_yaml_key(exc.cl, note.name),), out)
        for sub in others:
            _flatten(sub, path, out)
    elif isinstance(exc, IterableValidationError):
        indexed, unindexed = exc.group_exceptions()
        for sub, at in indexed:
            _flatten(sub, path + (at.index,), out)
        for sub in unindexed:
            _flatten(sub, path, out)
    elif isinstance(exc, ForbiddenExtraKeysError):
        for key in sorted(exc.extra_fields):
            out.append((path + (key,), f"unknown key {key!r}{did_you_mean(key, _yaml_keys(exc.cl))}"))
    elif isinstance(exc, KeyError):
        out.append((path, f"missing required key {exc.args[0]!r}"))
    else:
        out.append((path, str(exc)))


def position(positions: Positions, path: tuple[Any, ...]) -> tuple[int, int]:
    while path not in positions and path:
        path = path[:-1]
    return positions.get(path, (1, 1))


def structure(data: Any, positions: Positions, filename: str) -> model.Scenario:
    _SHARED_MATCHES.clear()
    try:
        return converter().structure(data, model.Scenario)
    except (ClassValidationError, IterableValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        flat: list[tuple[tuple[Any, ...], str]] = []
        _flatten(exc, (), flat)
        problems = [Problem(filename, *position(positions, p), msg, p) for p, msg in flat]
        problems.sort(key=lambda pr: (pr.line, pr.column))
        raise LoadError(problems) from None


