"""RFC 6570 URI templates matched against a URI in time linear in the URI's length.

A template used to become a regular expression for ``re``, whose backtracking made
some templates cost a power of the URI's length: ``{a}{b}{c}{d}x`` never finished on
3,000 characters, ``{name}.{ext}`` took seconds on a 30 KB ``a.a.a...a./``. The same
expression is now a small program of parts (literals, ``[?&]``, runs of a character
class, optional groups), and matching is dynamic programming over it: from the last
part to the first, which positions of the URI the rest of the template can match from
(a ``bytearray`` per part, filled by ``str.find`` and slices rather than a loop per
character). A walk from the start then takes, at each choice, what the regex would
have tried first among the choices that lead to a match (the longest run for a greedy
variable, the shortest for a reserved one, entering an optional group before skipping
it), so the values are the ones the regex gave. Sans-I/O.
"""

from __future__ import annotations

import re
from typing import Union

from mockmcp.wire.lazyre import LazyPattern

_EXPR = LazyPattern(r"\{([+#./;?&]?)([A-Za-z0-9_.,*:%]*)\}")
# a variable that can name a value, with an optional prefix (``:3``) or explode (``*``) modifier
_VARSPEC = LazyPattern(r"([A-Za-z_][A-Za-z0-9_]*)(?::([1-9][0-9]{0,3})|(\*))?\Z")
# RFC 6570 section 3.2: per operator, the text before the first value, between values,
# whether values are named (name=value), and the characters one value may NOT hold when
# matching (``\n`` for the reserved operators: the regex's ``.``)
_OPERATORS: dict[str, tuple[str, str, bool, str]] = {
    "": ("", ",", False, "/?#,"),
    "+": ("", ",", False, "\n"),
    "#": ("#", ",", False, "\n"),
    ".": (".", ".", False, "/?#."),
    "/": ("/", "/", False, "/?#"),
    ";": (";", ";", True, ";/?#"),
    "?": ("?", "&", True, "&#"),
    "&": ("&", "&", True, "&#"),
}


class _Var:
    """A variable's value: a run of characters outside ``excluded``, ``low`` to ``high``
    (``None``: any number) long, the longest that leads to a match first (``greedy``) or
    the shortest."""

    __slots__ = ("name", "excluded", "run", "low", "high", "greedy")

    def __init__(self, name: str, excluded: str, low: int, high: int | None, greedy: bool) -> None:
        self.name, self.excluded, self.low, self.high, self.greedy = name, excluded, low, high, greedy
        self.run = re.compile(f"[^{re.escape(excluded)}]+")


class _Optional:
    """A part that may be left out (the named operators' variables); entered first."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[_Part]) -> None:
        self.parts = parts


class _OneOf:
    """One character of ``chars`` (``[?&]``: either may start a query variable)."""

    __slots__ = ("chars",)

    def __init__(self, chars: str) -> None:
        self.chars = chars


_Part = Union[str, _Var, _Optional, _OneOf]  # a str is a literal
# The program: one node per part, each naming the node that follows it (its continuation);
# node 0 is the end of the URI. A node's index is larger than its continuation's, so the
# table of a node is filled after the tables it reads.
_Node = tuple[Union[_Part, None], int, int]  # (part, continuation, body of an _Optional or -1)
_ONES = b"\x01"


class UriTemplate:
    """A compiled template: ``match(uri)`` gives each variable's value (``None`` for a
    named variable left out) or ``None`` when the URI does not match."""

    def __init__(self, template: str, parts: list[_Part], names: list[str]) -> None:
        self.template = template
        self.names = tuple(names)
        self.groupindex = {name: i + 1 for i, name in enumerate(names)}  # (as a regex's: the variables, in order)
        self._nodes: list[_Node] = [(None, -1, -1)]
        self._start = self._build(parts, 0)
        self._head = parts[0] if parts and type(parts[0]) is str else ""
        self._tail = parts[-1] if len(parts) > 1 and type(parts[-1]) is str else ""

    def _build(self, parts: list[_Part], cont: int) -> int:
        for part in reversed(parts):
            body = self._build(part.parts, cont) if isinstance(part, _Optional) else -1
            self._nodes.append((part, cont, body))
            cont = len(self._nodes) - 1
        return cont

    def match(self, uri: str) -> dict[str, str | None] | None:
        if not uri.startswith(self._head) or not uri.endswith(self._tail) or len(uri) < len(self._head) + len(self._tail):
            return None  # (most templates of a scenario end here, at no cost)
        ok = self._tables(uri)
        if not ok[self._start][0]:
            return None
        values: dict[str, str | None] = dict.fromkeys(self.names)
        node, pos = self._start, 0
        while node:
            part, cont, body = self._nodes[node]
            if type(part) is str:
                pos += len(part)
            elif isinstance(part, _OneOf):
                pos += 1
            elif isinstance(part, _Optional):
                cont = body if ok[body][pos] else cont
            else:
                assert isinstance(part, _Var)
                run = part.run.match(uri, pos)
                last = run.end() if run is not None else pos
                if part.high is not None:
                    last = min(last, pos + part.high)
                find = ok[cont].rfind if part.greedy else ok[cont].find
                end = find(1, pos + part.low, last + 1)
                values[part.name] = uri[pos:end]
                pos = end
            node = cont
        return values

    def _tables(self, uri: str) -> list[bytearray]:
        """Per node, at which positions of ``uri`` the rest of the template matches (1) or not (0)."""
        n = len(uri)
        end = bytearray(n + 1)
        end[n] = 1
        ok = [end]
        for part, cont, body in self._nodes[1:]:
            after = ok[cont]
            here = bytearray(n + 1)
            if type(part) is str:
                size = len(part)
                i = uri.find(part)
                while i >= 0:
                    if after[i + size]:
                        here[i] = 1
                    i = uri.find(part, i + 1)
            elif isinstance(part, _OneOf):
                for c in part.chars:
                    i = uri.find(c)
                    while i >= 0:
                        if after[i + 1]:
                            here[i] = 1
                        i = uri.find(c, i + 1)
            elif isinstance(part, _Optional):
                both = int.from_bytes(ok[body], "little") | int.from_bytes(after, "little")
                here = bytearray(both.to_bytes(n + 1, "little"))
            else:
                assert isinstance(part, _Var)
                _fill_run(part, uri, after, here)
            ok.append(here)
        return ok


def _fill_run(var: _Var, uri: str, after: bytearray, here: bytearray) -> None:
    """Mark where ``var`` can start: ``low`` to ``high`` characters of its class, then a
    position ``after`` marks. Per run of the class, not per character."""
    low, high = var.low, var.high
    if low == 0:
        here[:] = after  # an empty value: the rest from the same place
    for m in var.run.finditer(uri):
        start, stop = m.span()  # the run is uri[start:stop]
        if high is None:
            # any position of the run up to the last mark (less ``low``) reaches a mark
            last = after.rfind(1, start + low, stop + 1)
            if last >= 0:
                here[start : last - low + 1] = _ONES * (last - low + 1 - start)
            continue
        # a mark at t is reached from [t - high, t - low]: merge those spans as they come
        lo_span = hi_span = -1
        t = after.find(1, start + low, stop + 1)
        while t >= 0:
            a, b = max(start, t - high), t - low
            if lo_span >= 0 and a > hi_span + 1:
                here[lo_span : hi_span + 1] = _ONES * (hi_span + 1 - lo_span)
                lo_span = a
            elif lo_span < 0:
                lo_span = a
            hi_span = b
            t = after.find(1, t + 1, stop + 1)
        if lo_span >= 0:
            here[lo_span : hi_span + 1] = _ONES * (hi_span + 1 - lo_span)


def compile_uri_template(template: str) -> UriTemplate:
    """RFC 6570 templates of levels 1 to 4 as a matcher; each variable names a value.

    Level 1-2: ``{var}``, ``{+var}``, ``{#var}``; level 3: several variables per
    expression and the ``.``, ``/``, ``;``, ``?``, ``&`` operators; level 4: the prefix
    (``{var:3}``: at most 3 characters) and explode (``{/path*}``) modifiers. Matching a
    URI against it is the reverse of expansion, so some choices are made: the named
    operators' variables (``;``, ``?``, ``&``) are each optional and in the template's
    order (an absent one is ``None``); an exploded variable takes the whole text its
    expansion could have made, separators included (``{/path*}`` on ``/a/b`` is ``a/b``,
    ``{?q*}`` on ``?x=1&y=2`` is ``x=1&y=2``); where values could split a text several
    ways, a simple variable takes the longest share that still matches (``{name}.{ext}``
    on ``a.b.c``: ``a.b`` and ``c``) and a reserved one (``{+path}``, ``{#frag}``) the
    shortest (so a following ``{?q}`` can match). Values are not percent-decoded.

    Raises ``ValueError`` with a message for the scenario's author for what it
    cannot match: a variable name that cannot name a value (``{a.b}``, ``{1}``;
    RFC 6570 allows them, mockmcp does not), and a variable used twice (``{a}/{a}``:
    which value would it take?). ``mockmcp check`` reports it, so the engine only sees
    templates that compile.
    """
    parts: list[_Part] = []
    names: list[str] = []
    pos = 0
    for m in _EXPR.get().finditer(template):
        if m.start() > pos:
            parts.append(template[pos : m.start()])
        op, specs = m.group(1), m.group(2).split(",")
        first, sep, named, excluded = _OPERATORS[op]
        for i, spec in enumerate(specs):
            var = _VARSPEC.get().match(spec)
            if var is None:
                raise ValueError(f"URI template variable {spec!r} in {m.group(0)!r} is not supported: use letters, digits and _, not starting with a digit")
            name, prefix, explode = var.group(1), var.group(2), var.group(3)
            if name in names:
                raise ValueError(f"URI template variable {name!r} appears twice; give each place its own name")
            names.append(name)
            if explode:
                value = _Var(name, "#" if named or op in ("+", "#") else "?#", 0, None, True)
            elif prefix:
                value = _Var(name, excluded, 1, int(prefix), True)
            else:
                # reserved expansion may hold anything: shortest first, so a following {?q} can match
                value = _Var(name, excluded, 0 if named or op == "/" else 1, None, op not in ("+", "#"))
            if op in ("?", "&"):
                # any of the query's names may come first: '?' or '&' before each
                parts.append(_Optional([_OneOf("?&"), value] if explode else [_OneOf("?&"), f"{name}=", value]))
            elif op == ";":
                parts.append(_Optional([";", value] if explode else [f";{name}", _Optional(["=", value])]))
            else:
                lead = first if i == 0 else sep
                parts.extend([lead, value] if lead else [value])
        pos = m.end()
    if pos < len(template):
        parts.append(template[pos:])
    return UriTemplate(template, _merge_literals(parts), names)


def _merge_literals(parts: list[_Part]) -> list[_Part]:
    """Adjacent literals as one (``x://`` then ``/`` is ``x:///``), so the head and tail checks see them whole."""
    out: list[_Part] = []
    for part in parts:
        if type(part) is str and out and type(out[-1]) is str:
            out[-1] = str(out[-1]) + part
        else:
            out.append(part)
    return out
