"""Does a rule's ``when`` match a request? And if none did, which came closest?

Mappings match as subsets, lists and scalars exactly (``1`` never equals
``true``), and a mapping whose keys all start with ``$`` is a matcher:
``$regex``, ``$present``, ``$absent``, ``$type``, ``$contains``, ``$anyOf``, and
``$literal`` (its operand is a value, never a pattern: how a recording writes a
mapping of ``$`` keys that a client sent). Under ``exactArguments`` the arguments' mappings match exactly at every depth (no
key besides the rule's), not only the top level's; a matcher's operands keep
their own rules.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator

from mockmcp.scenario.model import base as model
from mockmcp.wire.lazyre import LazyPattern

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


def value_matches(pattern: Any, value: Any, exact: bool = False) -> bool:
    """Whether ``value`` matches ``pattern``; ``exact``: a mapping may have no key the pattern has
    not (at every depth), as ``exactArguments`` wants."""
    if is_matcher(pattern):
        return _matcher(pattern, value)
    if value is _ABSENT:
        return False
    tp = type(pattern)
    if tp is dict:
        if type(value) is not dict:
            return False
        if exact and any(k not in pattern for k in value):
            return False
        for k, sub in pattern.items():
            v = value.get(k, _ABSENT)
            if is_matcher(sub):
                if not _matcher(sub, v):
                    return False
            elif v is _ABSENT or not value_matches(sub, v, exact):
                return False
        return True
    if tp is list:
        return type(value) is list and len(value) == len(pattern) and all(
            value_matches(a, b, exact) for a, b in zip(pattern, value)
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
            if type(value) is not str or not regex_search(arg, value):
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
        elif op == "$literal":
            if value is _ABSENT or not same_value(arg, value):
                return False
        else:
            return False
    return True




def same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values: every key and item, numbers by value (``1`` and ``1.0``), ``true``
    never ``1``; nothing in ``a`` is read as a matcher."""
    ta, tb = type(a), type(b)
    if ta is dict:
        return tb is dict and a.keys() == b.keys() and all(same_value(v, b[k]) for k, v in a.items())
    if ta is list:
        return tb is list and len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if (ta is int or ta is float) and (tb is int or tb is float):
        return bool(a == b)
    return ta is tb and a == b


def _state_ok(want: str | list[str] | None, state: str) -> bool:
    if want is None:
        return True
    return state == want if isinstance(want, str) else state in want


def mismatch(when: model.Match, ctx: dict[str, Any]) -> str | None:
    """Why ``when`` does not match (``None`` if it does)."""
    return next(_mismatches(when, ctx), None)


def mismatches(when: model.Match, ctx: dict[str, Any]) -> list[str]:
    """Every part of ``when`` that does not match (empty if it matches)."""
    return list(_mismatches(when, ctx))


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
        exact = when.exactArguments
        for k, want in when.arguments.items():
            got = args.get(k, _ABSENT)
            if not value_matches(want, got, exact):
                where, got, want = _first_difference(want, got, "", exact)
                yield f"argument {k!r}{_sub(where)} is {_show(got)}, rule wants {_show(want)}"
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
                    where, got, want = _first_difference(want, got, f"{label}.{k}")
                    yield f"{where} is {_show(got)}, rule wants {_show(want)}"


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


def value_mismatch(pattern: Any, value: Any, path: str = "") -> str | None:
    """Where ``value`` first departs from ``pattern`` (``value_matches``'s rules), said with its path;
    ``None`` if it matches."""
    if value_matches(pattern, value):
        return None
    where, got, want = _first_difference(pattern, value, path)
    return f"{where or 'the value'} is {_show(got)}, expected {_show(want)}"


def _first_difference(pattern: Any, value: Any, path: str, exact: bool = False) -> tuple[str, Any, Any]:
    """The path, value and pattern of the first leaf where ``value`` does not match ``pattern``
    (mappings and same-length lists are descended, so a near miss names the leaf that differs;
    ``exact``: a key the pattern has not is such a leaf, its pattern absent)."""
    if not is_matcher(pattern) and type(pattern) is dict and type(value) is dict:
        for k, want in pattern.items():
            got = value.get(k, _ABSENT)
            if not value_matches(want, got, exact):
                return _first_difference(want, got, f"{path}.{k}" if path else str(k), exact)
        if exact:
            for k, got in value.items():
                if k not in pattern:
                    return f"{path}.{k}" if path else str(k), got, _ABSENT
    if type(pattern) is list and type(value) is list and len(pattern) == len(value):
        for i, (want, got) in enumerate(zip(pattern, value)):
            if not value_matches(want, got, exact):
                return _first_difference(want, got, f"{path}[{i}]", exact)
    return path, value, pattern


def _sub(where: str) -> str:
    """The part of a path below an argument (``.city.name``, ``[0]``), as said after its name."""
    return where if not where or where.startswith("[") else "." + where


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


# ---------------------------------------------------------------- checking patterns (mockmcp check)

_OPERATORS = ("$present", "$absent", "$regex", "$type", "$contains", "$anyOf", "$literal")

PatternProblem = tuple[tuple[Any, ...], str]  # (path inside the pattern, message)


def pattern_problems(pattern: Any, path: tuple[Any, ...] = ()) -> list[PatternProblem]:
    """Every matcher in ``pattern`` whose operator or operand ``run`` could not use."""
    out: list[PatternProblem] = []
    if is_matcher(pattern):
        for op, arg in pattern.items():
            out += _operator_problems(op, arg, path + (op,))
    elif type(pattern) is dict:
        for k, sub in pattern.items():
            out += pattern_problems(sub, path + (k,))
    elif type(pattern) is list:
        for i, sub in enumerate(pattern):
            out += pattern_problems(sub, path + (i,))
    return out


def _operator_problems(op: str, arg: Any, path: tuple[Any, ...]) -> list[PatternProblem]:
    if op == "$literal":
        return []  # any value: it is compared, never read as a pattern
    if op in ("$present", "$absent"):
        return [] if type(arg) is bool else [(path, f"{op} takes true or false, not {_show(arg)}")]
    if op == "$regex":
        problem = regex_problem(arg)
        return [] if problem is None else [(path, problem)]
    if op == "$type":
        if arg in _TYPES:
            return []
        return [(path, f"$type must be one of {', '.join(_TYPES)}, not {_show(arg)}{_did_you_mean(arg, _TYPES)}")]
    if op == "$contains":
        return pattern_problems(arg, path)
    if op == "$anyOf":
        if type(arg) is not list or not arg:
            return [(path, f"$anyOf takes a non-empty list of patterns, not {_show(arg)}")]
        return [p for i, sub in enumerate(arg) for p in pattern_problems(sub, path + (i,))]
    return [(path, f"unknown matcher {op!r}{_did_you_mean(op, _OPERATORS)} (known: {', '.join(_OPERATORS)})")]


def _did_you_mean(word: Any, known: Iterable[str]) -> str:
    import difflib  # (only errors need it: spawns skip its import)

    close = difflib.get_close_matches(word, list(known), n=1) if type(word) is str else []
    return f"; did you mean {close[0]!r}?" if close else ""


# ---------------------------------------------------------------- regular expressions with bounded time
#
# Python's re backtracks and has no timeout, so a pattern is accepted only if its
# worst case can be bounded: no repetition of a group that itself repeats or
# alternates ((a+)+, (a|a)*: exponential), no backreferences or conditionals.
# What is left costs at most (string length + 1) ** (unbounded repetitions + 1)
# times the product of its bounded choices (a search tries every start), so each
# pattern gets the longest string that keeps that under REGEX_BUDGET steps; a
# longer string does not match.

REGEX_BUDGET = 2**24  # about 10-30 ms of re's backtracking
MIN_REGEX_INPUT = 64  # a pattern whose bound would be shorter is refused by check
# One search is bounded, but a request may hold thousands of strings ($contains over a
# list, a schema's items.pattern): 2,500 elements against .*.*=.*x took 6 s. So the
# searches made while a request is handled share this many steps, each counted at its
# worst case for its string's length (as REGEX_BUDGET is); past it the request is
# answered Invalid params, like a schema validation past its MAX_STEPS.
REQUEST_REGEX_BUDGET = 32 * REGEX_BUDGET


class RegexBudgetExceeded(Exception):
    """The searches for one request went past ``REQUEST_REGEX_BUDGET`` (the engine answers
    the request with this message as Invalid params)."""


class RegexWork:
    """The steps left to the request being handled (``None``: no request, no limit: a
    recording, a verification, a step's own matching are bounded per search only)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left: int | None = None

    def start(self) -> None:
        self.left = REQUEST_REGEX_BUDGET

    def stop(self) -> None:
        self.left = None


REGEX_WORK = RegexWork()


class _RegexShape:
    """What the cost of a pattern depends on, read by a small scanner of the re syntax."""

    def __init__(self, pattern: str) -> None:
        self.unbounded = 0  # repetitions without an upper bound
        self.choices = 1  # product of the other choice points: {m,n}, ?, alternatives
        self.problem: str | None = None
        self._scan(pattern)

    def _scan(self, src: str) -> None:
        # One frame per open group: [has a choice point inside, alternatives so far].
        frames: list[list[Any]] = [[False, 1]]
        last_group_choice: bool | None = None  # the atom just read: a group (with/without choices) or None
        i = 0
        while i < len(src) and self.problem is None:
            c = src[i]
            atom_choice: bool | None = None
            if c == "\\":
                if i + 1 < len(src) and src[i + 1] in "123456789":
                    self.problem = "backreferences are not allowed (their matching time cannot be bounded)"
                i += 2
            elif c == "[":
                i = _class_end(src, i)
            elif src.startswith("(?#", i):  # a comment (re.compile found its end)
                i = src.index(")", i) + 1
            elif c == "(":
                if src.startswith(("(?P=", "(?("), i):
                    self.problem = "backreferences and conditionals are not allowed (their matching time cannot be bounded)"
                i, opens, verbose = _group_start(src, i)
                if verbose:
                    self.problem = (
                        "sets verbose mode (the x flag: (?x) or (?x:...)), where whitespace and # comments change "
                        "what the pattern means and its matching time could not be bounded; write the pattern "
                        "without it (a space as [ ], no comments)"
                    )
                if opens:
                    frames.append([False, 1])
            elif c == ")":
                has_choice, branches = frames.pop() if len(frames) > 1 else (False, 1)
                self.choices *= branches
                atom_choice = has_choice or branches > 1
                if atom_choice:
                    frames[-1][0] = True
                i += 1
            elif c == "|":
                frames[-1][1] += 1
                frames[-1][0] = True
                i += 1
            elif c in "*+?{":
                quantifier = _quantifier(src, i)
                if quantifier is None:  # a literal "{"
                    i += 1
                else:
                    low, high, i = quantifier
                    self._repeat(low, high, last_group_choice, frames)
            else:
                i += 1
            last_group_choice = atom_choice
        self.choices *= frames[0][1]

    def _repeat(self, low: int, high: int | None, group_choice: bool | None, frames: list[list[Any]]) -> None:
        if (high is None or high > 1) and group_choice:
            self.problem = (
                "repeats a group that itself repeats or has alternatives, like (a+)+ or (a|b)*: "
                "its matching time can grow exponentially; use a character class or a single repetition"
            )
        if high is None:
            self.unbounded += 1
        elif high > low:
            self.choices *= high - low + 1
        if high is None or high > low:
            frames[-1][0] = True

    def max_input(self) -> int:
        """The longest string this pattern may test within the budget."""
        if self.choices >= REGEX_BUDGET:
            return 0
        return int((REGEX_BUDGET / self.choices) ** (1 / (self.unbounded + 1)))


_GROUP_PREFIX = LazyPattern(r"\(\?(?:P<\w+>|<[=!]|[:=!>]|(?P<on>[aiLmsux]*)(?:-[imsx]*)?(?P<close>\))?:?)|\(")


def _group_start(src: str, i: int) -> tuple[int, bool, bool]:
    """The index after the group opening at ``src[i]`` (``(``, ``(?:``, ``(?P<n>``, ...),
    whether it opens a group at all (``(?i)`` only sets flags), and whether it turns on
    verbose mode: the scanner reads the pattern as written, and under ``x`` a ``#`` starts
    a comment that can hide a ``)`` from it (``(?x)(a+#)\n)+`` is ``(a+)+``)."""
    m = _GROUP_PREFIX.get().match(src, i)
    assert m is not None  # "(" alone always matches
    return m.end(), m.group("close") is None, "x" in (m.group("on") or "")


def _class_end(src: str, i: int) -> int:
    """The index after the character class that opens at ``src[i]``."""
    i += 1
    if i < len(src) and src[i] == "^":
        i += 1
    if i < len(src) and src[i] == "]":
        i += 1
    while i < len(src) and src[i] != "]":
        i += 2 if src[i] == "\\" else 1
    return i + 1


_BRACES = LazyPattern(r"\{(\d*)(?:(,)(\d*))?\}")


def _quantifier(src: str, i: int) -> tuple[int, int | None, int] | None:
    """``(low, high, index after)`` of the quantifier at ``src[i]`` (``None``: a literal brace)."""
    c = src[i]
    if c == "{":
        m = _BRACES.get().match(src, i)
        if m is None or (not m.group(1) and not m.group(2)):
            return None
        low = int(m.group(1) or 0)
        high = None if m.group(2) and not m.group(3) else int(m.group(3) or m.group(1))
        end = m.end()
    else:
        low, high, end = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c] + (i + 1,)
    if end < len(src) and src[end] in "?+":  # lazy or possessive: the same choices
        end += 1
    return low, high, end


_regexes: dict[str, tuple[re.Pattern[str], int, int, int]] = {}


def regex_problem(pattern: Any, label: str = "$regex") -> str | None:
    """Why ``pattern`` cannot be a ``$regex`` (or a schema's ``pattern``: ``label``) (``None``: it can)."""
    if type(pattern) is not str:
        return f"{label} takes a string, not {_show(pattern)}"
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"{label} {_show(pattern)} is not a regular expression: {exc}"
    shape = _RegexShape(pattern)
    if shape.problem is not None:
        return f"{label} {_show(pattern)} {shape.problem}"
    if shape.max_input() < MIN_REGEX_INPUT:
        return (
            f"{label} {_show(pattern)} has too many repetitions and alternatives ({shape.unbounded} unbounded, "
            f"{shape.choices} other choices): its matching time could not be bounded for strings of "
            f"{MIN_REGEX_INPUT} characters; simplify it"
        )
    return None


def regex_search(pattern: str, value: str) -> bool:
    """``re.search`` within the pattern's input bound (a longer string does not match),
    counted against the request's ``REGEX_WORK`` (``RegexBudgetExceeded`` past it)."""
    entry = _regexes.get(pattern)
    if entry is None:
        shape = _RegexShape(pattern)
        entry = _regexes[pattern] = (re.compile(pattern), shape.max_input(), shape.unbounded + 1, shape.choices)
    compiled, max_input, power, choices = entry
    size = len(value)
    if size > max_input:
        return False
    work = REGEX_WORK
    if work.left is not None:
        work.left -= choices * (size + 1) ** power
        if work.left < 0:
            raise RegexBudgetExceeded(
                f"matching this request against the scenario's regular expressions ($regex, a schema's pattern) "
                f"needs more than the per-request budget of {REQUEST_REGEX_BUDGET} steps (each search of a string "
                f"counts its worst case for the string's length); send fewer or shorter strings, or use a pattern "
                f"with fewer repetitions ({pattern!r} was the last one searched)"
            )
    return compiled.search(value) is not None
