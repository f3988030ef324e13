"""A small, safe template form for scripted payloads.

``{{ arguments.text }}`` inserts a value from the request; a string that is
exactly one ``{{ ... }}`` keeps the value's JSON type (so ``{{ add(arguments.a,
arguments.b) }}`` stays a number). Expressions are paths into the request
context, literals and calls of a fixed set of pure helpers: there is no
attribute access on Python objects, no code execution and no file or
environment access. Parsed once per string and cached.

Templates run on client data, so every helper is total: whatever a request
holds, a helper returns a JSON value within the bounds below or raises
``TemplateError`` (which the engine answers with -32602). The bounds:

- a string a helper builds, and a rendered template string, has at most
  ``MAX_TEXT`` characters;
- an integer result has at most ``MAX_INT_DIGITS`` digits (the interpreter's
  default limit for turning integers into text); a float result is finite;
- an expression nests at most ``MAX_NESTING`` calls or brackets deep, and a
  number literal has at most ``MAX_INT_DIGITS`` digits.
"""

from __future__ import annotations

import binascii
import json
import math
from typing import Any, Callable

from mockmcp.wire.lazyre import LazyPattern

MAX_TEXT = 4 * 1024 * 1024
MAX_INT_DIGITS = 4300
MAX_NESTING = 32
_MAX_INT_BITS = math.floor(MAX_INT_DIGITS * math.log2(10))  # below 10**4300: at most 4300 digits

_TOKEN = LazyPattern(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(?P<str>'[^']*'|\"[^\"]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[.,()\[\]]))"
)
_INDEX = LazyPattern(r"-?[0-9]{1,9}")  # (rarely needed: compiled on first use, not at every spawn)
_NUMBER = LazyPattern(r"-?(?:0|[1-9][0-9]*)(?P<frac>\.[0-9]+)?(?P<exp>[eE][-+]?[0-9]+)?")


class TemplateError(ValueError):
    """A template that cannot be parsed (``mockmcp check``), or request values it cannot use (-32602)."""


def _clip(value: Any) -> str:
    """A short repr for messages: a value from a request may be megabytes long."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _bounded_int(value: int) -> int:
    if value.bit_length() > _MAX_INT_BITS:
        raise TemplateError(f"the integer result has more than {MAX_INT_DIGITS} digits")
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        # JSON has no NaN or Infinity (add(1e308, 1e308)): the reply could not be written
        raise TemplateError(f"the result {value} is not a JSON number")
    return value


def _text_bound(length: int) -> None:
    if length > MAX_TEXT:
        raise TemplateError(f"the text would have {length} characters, more than {MAX_TEXT}")


def to_number(value: Any) -> float | int:
    """A number, or a decimal number written as text (JSON's syntax: no ``nan``, ``1_000``, ``0x1``)."""
    if type(value) is int:
        return _bounded_int(value)
    if type(value) is float:
        return _finite(value)
    if type(value) is str:
        text = value.strip()
        m = _NUMBER.get().fullmatch(text)
        if m is None:
            raise TemplateError(f"not a number: {_clip(value)}")
        if m.group("frac") or m.group("exp"):
            return _finite(float(text))
        if len(text.lstrip("-")) > MAX_INT_DIGITS:
            raise TemplateError(f"the number {_clip(value)} has more than {MAX_INT_DIGITS} digits")
        return int(text)
    raise TemplateError(f"not a number: {_clip(value)}")


def to_text(value: Any) -> str:
    """How a value reads inside text: ``null`` is empty, numbers as JSON writes them, containers as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _div(a: Any, b: Any) -> Any:
    a, b = to_number(a), to_number(b)
    if b == 0:
        raise TemplateError("division by zero")
    r = a / b
    return int(r) if r.is_integer() and type(a) is int and type(b) is int else r


def _join_texts(texts: list[str], sep: str = "") -> str:
    """``sep.join(texts)``, refused before it is built if it would pass ``MAX_TEXT``."""
    _text_bound(sum(map(len, texts)) + len(sep) * max(len(texts) - 1, 0))
    return sep.join(texts)


def _join(xs: Any, sep: Any = ", ") -> str:
    if xs is None:
        return ""
    if type(xs) is not list:
        raise TemplateError(f"join() needs a list, not {_clip(xs)}")
    return _join_texts([to_text(x) for x in xs], to_text(sep))


def _length(x: Any) -> int:
    return len(x) if isinstance(x, (str, list, dict)) else 0


def _base64(x: Any) -> str:
    """The text's UTF-8 bytes in standard base64 (a ``blob``, an image's ``data``)."""
    raw = to_text(x).encode("utf-8", "surrogatepass")
    _text_bound((len(raw) + 2) // 3 * 4)
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


HELPERS: dict[str, Callable[..., Any]] = {
    "add": lambda *xs: sum(to_number(x) for x in xs),
    "sub": lambda a, b: to_number(a) - to_number(b),
    "mul": lambda a, b: to_number(a) * to_number(b),
    "div": _div,
    "neg": lambda a: -to_number(a),
    "concat": lambda *xs: _join_texts([to_text(x) for x in xs]),
    "upper": lambda s: to_text(s).upper(),
    "lower": lambda s: to_text(s).lower(),
    "length": _length,
    "json": lambda x: json.dumps(x, separators=(",", ":"), ensure_ascii=False),
    "default": lambda x, d: d if x is None else x,
    "join": _join,
    "string": to_text,
    "number": to_number,
    "base64": _base64,
}
# Helpers that read the engine's Effects (randomness and the clock the shell hands in,
# per-process counters) from the scope, under a key no template path can name.
EFFECT_HELPERS = frozenset({"uuid", "now", "counter"})
EFFECTS = "\x00effects"

Expr = tuple[Any, ...]  # ("lit", v) | ("path", [parts]) | ("call", name, [args])
_Tokens = list[tuple[str, str]]


def _tokens(src: str) -> _Tokens:
    pos, out = 0, []
    src = src.strip()
    while pos < len(src):
        m = _TOKEN.get().match(src, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"cannot parse {_clip(src)} at {_clip(src[pos:])}")
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
    expr, i = _parse(toks, 0, src, 0)
    if i != len(toks):
        raise TemplateError(f"unexpected {_clip(toks[i][1])} in {_clip(src.strip())}")
    return expr


def _literal_number(text: str) -> float | int:
    if len(text) > MAX_INT_DIGITS + 1:
        raise TemplateError(f"the number literal {_clip(text)} has more than {MAX_INT_DIGITS} digits")
    if any(c in text for c in ".eE"):
        value = float(text)
        if not math.isfinite(value):
            raise TemplateError(f"the number literal {_clip(text)} is beyond a double's range")
        return value
    return int(text)


def _unknown_helper(name: str) -> TemplateError:
    known = [*HELPERS, *EFFECT_HELPERS]
    import difflib  # (only errors need it: spawns skip its import)

    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return TemplateError(f"unknown helper {name!r}; did you mean {close[0]!r}?")
    return TemplateError(f"unknown helper {name!r} (known: {', '.join(sorted(known))})")


def _parse(toks: _Tokens, i: int, src: str, depth: int) -> tuple[Expr, int]:
    if depth > MAX_NESTING:
        raise TemplateError(f"expression nested more than {MAX_NESTING} calls deep in {_clip(src.strip())}")
    if i >= len(toks):
        raise TemplateError(f"incomplete expression {_clip(src.strip())}")
    kind, val = toks[i]
    if kind == "num":
        return ("lit", _literal_number(val)), i + 1
    if kind == "str":
        return ("lit", val[1:-1]), i + 1
    if kind != "name":
        raise TemplateError(f"unexpected {val!r} in {_clip(src.strip())}")
    if val in ("true", "false", "null"):
        return ("lit", {"true": True, "false": False, "null": None}[val]), i + 1
    if i + 1 < len(toks) and toks[i + 1][1] == "(":
        return _parse_call(toks, i, src, depth)
    return _parse_path(toks, i, src)


def _parse_call(toks: _Tokens, i: int, src: str, depth: int) -> tuple[Expr, int]:
    name = toks[i][1]
    if name not in HELPERS and name not in EFFECT_HELPERS:
        raise _unknown_helper(name)
    args: list[Expr] = []
    i += 2
    if i < len(toks) and toks[i][1] == ")":
        return ("call", name, args), i + 1
    while True:
        arg, i = _parse(toks, i, src, depth + 1)
        args.append(arg)
        if i < len(toks) and toks[i][1] == ",":
            i += 1
            continue
        if i < len(toks) and toks[i][1] == ")":
            return ("call", name, args), i + 1
        raise TemplateError(f"expected ',' or ')' in {_clip(src.strip())}")


def _parse_path(toks: _Tokens, i: int, src: str) -> tuple[Expr, int]:
    parts: list[Any] = [toks[i][1]]
    i += 1
    while i < len(toks) and toks[i][1] in (".", "["):
        if toks[i][1] == ".":
            if i + 1 >= len(toks) or toks[i + 1][0] not in ("name", "num"):
                raise TemplateError(f"expected a name after '.' in {_clip(src.strip())}")
            parts.append(toks[i + 1][1])
            i += 2
        else:
            if i + 2 >= len(toks) or toks[i + 2][1] != "]" or toks[i + 1][0] not in ("num", "str"):
                raise TemplateError(f"expected [index] in {_clip(src.strip())}")
            kind, k = toks[i + 1]
            if kind == "num" and not _INDEX.get().fullmatch(k):
                raise TemplateError(f"an index must be an integer of at most 9 digits, not {_clip(k)}")
            parts.append(int(k) if kind == "num" else k[1:-1])
            i += 3
    return ("path", parts), i


def evaluate(expr: Expr, ctx: dict[str, Any]) -> Any:
    kind = expr[0]
    if kind == "lit":
        return expr[1]
    if kind == "path":
        return walk(ctx, expr[1])
    name = expr[1]
    args = [evaluate(a, ctx) for a in expr[2]]
    try:
        if name in EFFECT_HELPERS:
            effects = ctx.get(EFFECTS)
            if effects is None:
                raise TemplateError("needs the running server (it is not available here)")
            result = getattr(effects, name)(*args)
        else:
            result = HELPERS[name](*args)
    except TemplateError as exc:
        raise TemplateError(f"{name}(): {exc}") from None
    except TypeError as exc:  # the wrong number of arguments
        raise TemplateError(f"{name}(): {exc}") from None
    except OverflowError:  # an integer too large for a float: add(1.5, 10**400), div(10**400, 3)
        raise TemplateError(f"{name}(): the result is beyond a double's range") from None
    return _checked(name, result)


def walk(cur: Any, parts: list[Any]) -> Any:
    """Follow a path's parts from ``cur`` (object keys, list indexes); ``None`` where it leads nowhere.

    Evaluating a path is this walk from the scope; a compiled reply starts it one
    step in, from the value the path's first name reads on the context."""
    for part in parts:
        if isinstance(cur, dict):
            cur = cur.get(part if isinstance(part, str) else str(part))
        elif isinstance(cur, list):
            index = part if type(part) is int else _index(part)
            if index is None or not -len(cur) <= index < len(cur):
                return None
            cur = cur[index]
        else:
            return None
    return cur


def _checked(name: str, result: Any) -> Any:
    """A helper's result within the documented bounds, or ``TemplateError``."""
    try:
        match result:
            case bool():
                return result
            case int():
                return _bounded_int(result)
            case float():
                return _finite(result)
            case str():
                _text_bound(len(result))
    except TemplateError as exc:
        raise TemplateError(f"{name}(): {exc}") from None
    return result


def _index(part: str) -> int | None:
    """``list.0``: a name part that reads as an index."""
    return int(part) if _INDEX.get().fullmatch(part) else None


def _scan(src: str) -> list[str]:
    """Split ``src`` into literal text and the sources of its ``{{ }}`` tags (odd positions), in linear time."""
    pieces: list[str] = []
    pos = 0
    while True:
        start = src.find("{{", pos)
        if start < 0:
            pieces.append(src[pos:])
            return pieces
        end = src.find("}}", start + 2)
        if end < 0:
            # most likely a typo; silently sending it as text would hide it
            raise TemplateError(f"unclosed '{{{{' in {_clip(src)}")
        pieces += [src[pos:start], src[start + 2 : end]]
        pos = end + 2


class Template:
    """A compiled string: literal text and expressions."""

    __slots__ = ("whole", "parts")

    def __init__(self, src: str) -> None:
        pieces = _scan(src)
        self.whole: Expr | None = None
        self.parts: list[str | Expr] = []
        if len(pieces) == 3 and pieces[0] == pieces[2] == "":
            self.whole = parse_expr(pieces[1])  # exactly one tag: the value keeps its JSON type
            return
        for n, piece in enumerate(pieces):
            if n % 2:
                self.parts.append(parse_expr(piece))
            elif piece:
                self.parts.append(piece)

    def render(self, ctx: dict[str, Any]) -> Any:
        if self.whole is not None:
            return evaluate(self.whole, ctx)
        texts = [p if isinstance(p, str) else to_text(evaluate(p, ctx)) for p in self.parts]
        return _join_texts(texts)


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
    """Render every template string inside a JSON value (keys included, always as text)."""
    if isinstance(value, str):
        return compile_string(value).render(ctx) if "{{" in value else value
    if isinstance(value, dict):
        return {(_render_key(k, ctx) if "{{" in k else k): render(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, ctx) for v in value]
    return value


def render_text(value: str | None, ctx: dict[str, Any]) -> str | None:
    """A field the protocol types as text (a URI, a message) rendered and read as text: a
    whole-value template keeps its value's JSON type elsewhere, but here an object or a number
    a client sent must still go out as a string (``None``: the field is absent)."""
    return None if value is None else to_text(render(value, ctx))


def _render_key(key: str, ctx: dict[str, Any]) -> str:
    """A key is text: ``{{ arguments.k }}`` with a list in ``k`` must not make an unhashable key."""
    value = compile_string(key).render(ctx)
    return value if type(value) is str else to_text(value)


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

