"""Does a rule's ``when`` match a request? And if none did, which came closest?

Mappings match as subsets, lists and scalars exactly (``1`` never equals
``true``), and a mapping whose keys all start with ``$`` is a matcher:
``$regex``, ``$present``, ``$absent``, ``$type``, ``$contains``, ``$anyOf``.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from . import model

_ABSENT = object()
_TYPES = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def is_matcher(pattern: Any) -> bool:
    return type(pattern) is dict and bool(pattern) and all(type(k) is str and k.startswith("$") for k in pattern)


def value_matches(pattern: Any, value: Any) -> bool:
    if is_matcher(pattern):
        return _matcher(pattern, value)
    if value is _ABSENT:
        return False
    tp = type(pattern)
    if tp is dict:
        if type(value) is not dict:
            return False
        for k, sub in pattern.items():
            v = value.get(k, _ABSENT)
            if is_matcher(sub):
                if not _matcher(sub, v):
                    return False
            elif v is _ABSENT or not value_matches(sub, v):
                return False
        return True
    if tp is list:
        return type(value) is list and len(value) == len(pattern) and all(
            value_matches(a, b) for a, b in zip(pattern, value)
        )
    if tp is float or tp is int:
        return type(value) in (int, float) and value == pattern
    return type(value) is tp and value == pattern


def _matcher(m: dict[str, Any], value: Any) -> bool:
    for op, arg in m.items():
        if op == "$present":
            if (value is not _ABSENT) != bool(arg):
                return False
        elif op == "$absent":
            if (value is _ABSENT) != bool(arg):
                return False
        elif op == "$regex":
            if type(value) is not str or not re.search(arg, value):
                return False
        elif op == "$type":
            if value is _ABSENT or type(value) not in _TYPES.get(arg, ()) or (arg != "boolean" and type(value) is bool):
                return False
        elif op == "$contains":
            if type(value) is str:
                if type(arg) is not str or arg not in value:
                    return False
            elif type(value) is list:
                if not any(value_matches(arg, v) for v in value):
                    return False
            else:
                return False
        elif op == "$anyOf":
            if not any(value_matches(a, value) for a in arg):
                return False
        else:
            return False
    return True


MATCHER_OPS = ("$present", "$absent", "$regex", "$type", "$contains", "$anyOf")


def _state_ok(want: str | list[str] | None, state: str) -> bool:
    if want is None:
        return True
    return state == want if isinstance(want, str) else state in want


def mismatch(when: model.Match, ctx: dict[str, Any]) -> str | None:
    """Why ``when`` does not match (``None`` if it does)."""
    return next(_mismatches(when, ctx), None)


def _mismatches(when: model.Match, ctx: dict[str, Any]) -> Iterator[str]:
    """Every part of ``when`` that does not match, in the order they are checked."""
    if when.round is not None and ctx["round"] != when.round:
        yield f"round is {ctx['round']}, rule wants {when.round}"
    if not _state_ok(when.state, ctx["state"]):
        yield f"state is {ctx['state']!r}, rule wants {when.state!r}"
    if when.arguments is not None:
        args = ctx["arguments"]
        if when.exactArguments:
            if set(args) != set(when.arguments):
                yield f"arguments have keys {sorted(args)}, rule wants exactly {sorted(when.arguments)}"
        for k, want in when.arguments.items():
            got = args.get(k, _ABSENT)
            if not value_matches(want, got):
                yield f"argument {k!r} is {_show(got)}, rule wants {_show(want)}"
    for label, pattern, value in (
        ("inputResponses", when.inputResponses, ctx["inputResponses"]),
        ("vars", when.vars, ctx["vars"]),
        ("params", when.params, ctx["params"]),
        ("_meta", when.meta, ctx["meta"]),
    ):
        if pattern is not None:
            for k, want in pattern.items():
                got = value.get(k, _ABSENT) if type(value) is dict else _ABSENT
                if not value_matches(want, got):
                    yield f"{label}.{k} is {_show(got)}, rule wants {_show(want)}"


def matches(when: model.Match, ctx: dict[str, Any]) -> bool:
    """The hot path of rule selection: cheap checks first, the full walk only when needed."""
    if when.round is not None and ctx["round"] != when.round:
        return False
    if when.state is not None and not _state_ok(when.state, ctx["state"]):
        return False
    if (
        when.arguments is None
        and when.inputResponses is None
        and when.vars is None
        and when.params is None
        and when.meta is None
    ):
        return True
    return mismatch(when, ctx) is None


def _show(v: Any) -> str:
    if v is _ABSENT:
        return "absent"
    import json

    try:
        return json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(v)


def near_miss(rules: list[model.Rule], ctx: dict[str, Any]) -> dict[str, Any] | None:
    """The closest rule (fewest parts of ``when`` unmatched; first on ties) and what did not match."""
    best: tuple[int, int, list[str]] | None = None
    for index, rule in enumerate(rules):
        reasons = list(_mismatches(rule.when, ctx))
        if best is None or len(reasons) < len(best[2]):
            best = (index, len(reasons), reasons)
        if not reasons:
            break
    if best is None:
        return None
    index, _, reasons = best
    rule = rules[index]
    if not reasons:
        reasons = ["it matched, but its targeting (nth/every/first/after/probability) skipped this request"]
    out: dict[str, Any] = {"rule": rule.name or f"replies[{index}]", "reason": "; ".join(reasons)}
    return out
