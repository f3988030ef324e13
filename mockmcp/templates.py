"""A small, safe template form for scripted payloads.

``{{ arguments.text }}`` inserts a value from the request; a string that is
exactly one ``{{ ... }}`` keeps the value's JSON type (so ``{{ add(arguments.a,
arguments.b) }}`` stays a number). Expressions are paths into the request
context, literals and calls of a fixed set of pure helpers: there is no
attribute access on Python objects, no code execution and no file or
environment access. Parsed once per string and cached.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable

_TAG = re.compile(r"\{\{(.*?)\}\}", re.S)
_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[.,()\[\]]))"
)


class TemplateError(ValueError):
    """A template that cannot be parsed (reported by ``mockmcp check``)."""


def _num(x: Any) -> float | int:
    if type(x) in (int, float):
        return x
    if type(x) is str:
        try:
            return int(x)
        except ValueError:
            return float(x)
    raise TemplateError(f"not a number: {x!r}")


def _text(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return repr(x) if isinstance(x, float) and not x.is_integer() else str(int(x)) if isinstance(x, float) else str(x)
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False)


def _div(a: Any, b: Any) -> Any:
    a, b = _num(a), _num(b)
    if b == 0:
        raise TemplateError("division by zero")
    r = a / b
    return int(r) if r.is_integer() and type(a) is int and type(b) is int else r


HELPERS: dict[str, Callable[..., Any]] = {
    "add": lambda *xs: sum(_num(x) for x in xs),
    "sub": lambda a, b: _num(a) - _num(b),
    "mul": lambda a, b: _num(a) * _num(b),
    "div": _div,
    "neg": lambda a: -_num(a),
    "concat": lambda *xs: "".join(_text(x) for x in xs),
    "upper": lambda s: _text(s).upper(),
    "lower": lambda s: _text(s).lower(),
    "length": lambda x: len(x) if isinstance(x, (str, list, dict)) else 0,
    "json": lambda x: json.dumps(x, separators=(",", ":"), ensure_ascii=False),
    "default": lambda x, d: d if x is None else x,
    "join": lambda xs, sep=", ": _text(sep).join(_text(x) for x in (xs or [])),
    "string": _text,
    "number": _num,
}

Expr = tuple  # ("lit", v) | ("path", [parts]) | ("call", name, [args])


def _tokens(src: str) -> list[tuple[str, str]]:
    pos, out = 0, []
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"cannot parse {src!r} at {src[pos:]!r}")
        kind = m.lastgroup or "op"
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(src) and src[pos].isspace():
            pos += 1
    return out


def parse_expr(src: str) -> Expr:
    toks = _tokens(src)
    if not toks:
        raise TemplateError("empty expression {{ }}")
    expr, i = _parse(toks, 0, src)
    if i != len(toks):
        raise TemplateError(f"unexpected {toks[i][1]!r} in {src.strip()!r}")
    return expr


def _parse(toks: list[tuple[str, str]], i: int, src: str) -> tuple[Expr, int]:
    if i >= len(toks):
        raise TemplateError(f"incomplete expression {src.strip()!r}")
    kind, val = toks[i]
    if kind == "num":
        return ("lit", float(val) if any(c in val for c in ".eE") else int(val)), i + 1
    if kind == "str":
        return ("lit", val[1:-1]), i + 1
    if kind != "name":
        raise TemplateError(f"unexpected {val!r} in {src.strip()!r}")
    if val in ("true", "false", "null"):
        return ("lit", {"true": True, "false": False, "null": None}[val]), i + 1
    if i + 1 < len(toks) and toks[i + 1][1] == "(":
        if val not in HELPERS:
            raise TemplateError(f"unknown helper {val!r} (known: {', '.join(sorted(HELPERS))})")
        args: list[Expr] = []
        i += 2
        if i < len(toks) and toks[i][1] == ")":
            return ("call", val, args), i + 1
        while True:
            arg, i = _parse(toks, i, src)
            args.append(arg)
            if i < len(toks) and toks[i][1] == ",":
                i += 1
                continue
            if i < len(toks) and toks[i][1] == ")":
                return ("call", val, args), i + 1
            raise TemplateError(f"expected ',' or ')' in {src.strip()!r}")
    parts: list[Any] = [val]
    i += 1
    while i < len(toks) and toks[i][1] in (".", "["):
        if toks[i][1] == ".":
            if i + 1 >= len(toks) or toks[i + 1][0] not in ("name", "num"):
                raise TemplateError(f"expected a name after '.' in {src.strip()!r}")
            parts.append(toks[i + 1][1])
            i += 2
        else:
            if i + 2 >= len(toks) or toks[i + 2][1] != "]" or toks[i + 1][0] not in ("num", "str"):
                raise TemplateError(f"expected [index] in {src.strip()!r}")
            k = toks[i + 1][1]
            parts.append(int(k) if toks[i + 1][0] == "num" else k[1:-1])
            i += 3
    return ("path", parts), i


def evaluate(expr: Expr, ctx: dict[str, Any]) -> Any:
    kind = expr[0]
    if kind == "lit":
        return expr[1]
    if kind == "path":
        cur: Any = ctx
        for part in expr[1]:
            if isinstance(cur, dict):
                cur = cur.get(part if isinstance(part, str) else str(part))
            elif isinstance(cur, list):
                try:
                    cur = cur[int(part)]
                except (ValueError, IndexError):
                    return None
            else:
                return None
        return cur
    args = [evaluate(a, ctx) for a in expr[2]]
    try:
        result = HELPERS[expr[1]](*args)
    except TemplateError:
        raise
    except (TypeError, ValueError) as exc:  # wrong arguments, or a value that is no number ("x" in add)
        raise TemplateError(f"{expr[1]}(): {exc}") from None
    if type(result) is float and not math.isfinite(result):
        # JSON has no NaN or Infinity (add(1e308, 1e308), number('nan')): the reply could not be written
        raise TemplateError(f"{expr[1]}(): the result {result} is not a JSON number")
    return result


class Template:
    """A compiled string: literal text and expressions."""

    __slots__ = ("whole", "parts")

    def __init__(self, src: str) -> None:
        m = _TAG.fullmatch(src)
        if m and ("{{" in m.group(1) or "}}" in m.group(1)):
            m = None  # "{{ a }} and {{ b }}" is two tags, not one whole-string expression
        self.whole: Expr | None = parse_expr(m.group(1)) if m else None
        self.parts: list[str | Expr] = []
        if self.whole is None:
            pos = 0
            for m in _TAG.finditer(src):
                if m.start() > pos:
                    self.parts.append(src[pos : m.start()])
                self.parts.append(parse_expr(m.group(1)))
                pos = m.end()
            if pos < len(src):
                self.parts.append(src[pos:])
            for part in self.parts:
                if isinstance(part, str) and "{{" in part:
                    # most likely a typo; silently sending it as text would hide it
                    raise TemplateError(f"unclosed '{{{{' in {src!r}")

    def render(self, ctx: dict[str, Any]) -> Any:
        if self.whole is not None:
            return evaluate(self.whole, ctx)
        return "".join(p if isinstance(p, str) else _text(evaluate(p, ctx)) for p in self.parts)


def has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(has_template(k) or has_template(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_template(v) for v in value)
    return False


_cache: dict[str, Template] = {}


def compile_string(src: str) -> Template:
    t = _cache.get(src)
    if t is None:
        t = _cache[src] = Template(src)
    return t


def render(value: Any, ctx: dict[str, Any]) -> Any:
    """Render every template string inside a JSON value (keys included)."""
    if isinstance(value, str):
        return compile_string(value).render(ctx) if "{{" in value else value
    if isinstance(value, dict):
        return {(render(k, ctx) if "{{" in k else k): render(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, ctx) for v in value]
    return value


def check(value: Any) -> list[str]:
    """Parse every template in a value; return the error messages."""
    errors: list[str] = []
    if isinstance(value, str):
        if "{{" in value:
            try:
                compile_string(value)
            except TemplateError as exc:
                errors.append(str(exc))
    elif isinstance(value, dict):
        for k, v in value.items():
            errors += check(k) + check(v)
    elif isinstance(value, list):
        for v in value:
            errors += check(v)
    return errors
