"""Expectations: what the client must have sent, judged when the mock exits.

Sans-I/O: ``ExpectationTracker`` is told about every request (in arrival
order) and, at the end, gives a verdict for each ``expectations:`` entry of
the scenario. Matching reuses the ``when`` matchers of ``matching`` so a
scenario author learns one vocabulary. ``problems`` is the static check the
scenario checker runs at load time (unknown ids, contradicting counts).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mockmcp.wire import protocol as p
from mockmcp.scenario.matching import pattern_problems, value_matches
from mockmcp.scenario.problems import did_you_mean

if TYPE_CHECKING:
    from mockmcp.scenario.model.options import Expectation


def describe(e: Expectation) -> str:
    """A short human name for an expectation, e.g. ``tools/call echo {"text": "hi"}``."""
    parts = [e.method]
    if e.name is not None:
        parts.append(e.name)
    if e.uri is not None:
        parts.append(e.uri)
    if e.arguments is not None:
        parts.append(json.dumps(e.arguments, ensure_ascii=False, sort_keys=True))
    if e.params is not None:
        parts.append("params " + json.dumps(e.params, ensure_ascii=False, sort_keys=True))
    if e.headers is not None:
        parts.append("headers " + json.dumps(e.headers, ensure_ascii=False, sort_keys=True))
    return " ".join(parts)


def wanted(e: Expectation) -> str:
    if e.never:
        return "never"
    if e.exactly is not None:
        return f"exactly {_times(e.exactly)}"
    if e.atLeast is not None and e.atMost is not None:
        return f"between {e.atLeast} and {_times(e.atMost)}"
    if e.atMost is not None:
        return f"at most {_times(e.atMost)}"
    return f"at least {_times(e.atLeast if e.atLeast is not None else 1)}"


def _times(n: int) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


def label(index: int, e: Expectation) -> str:
    return e.id if e.id is not None else f"expectations[{index}]"


def is_retry(method: str, params: dict[str, Any]) -> bool:
    """A later round of an ``input_required`` exchange (counted only by ``retries: true``)."""
    return method in p.INPUT_REQUIRED_METHODS and ("requestState" in params or "inputResponses" in params)


def request_matches(e: Expectation, method: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> bool:
    if not e.retries and is_retry(method, params):
        return False
    return _matches_but_for_retries(e, method, params, headers)


def _matches_but_for_retries(e: Expectation, method: str, params: dict[str, Any], headers: dict[str, str] | None) -> bool:
    if method != e.method:
        return False
    if e.name is not None and params.get("name") != e.name:
        return False
    if e.uri is not None and params.get("uri") != e.uri:
        return False
    if e.arguments is not None:
        args = params.get("arguments")
        if not value_matches(e.arguments, args if type(args) is dict else {}):
            return False
    if e.params is not None and not value_matches(e.params, params):
        return False
    if e.headers is not None:
        # names lower-cased on both sides (HTTP field names are case-insensitive); no headers on stdio
        pattern = {k.lower(): v for k, v in e.headers.items()}
        if not value_matches(pattern, headers or {}):
            return False
    return True


KEPT_IDS = 50  # the first matches of each expectation kept (a verdict shows their ids and the first's place)


class ExpectationTracker:
    """Counts, per expectation, the requests that match it; keeps the first ``KEPT_IDS`` of them.

    What it keeps is bounded and plain JSON (``export``/``restore``), so a
    session's verdict can be carried on from where the last one stopped
    instead of judging the whole journal again."""

    def __init__(self, expectations: list[Expectation]) -> None:
        self.expectations = list(expectations)
        self.seen: list[list[tuple[int, Any]]] = [[] for _ in self.expectations]  # (sequence number, request id)
        self.counts = [0] * len(self.expectations)
        # matching retries left out of the count (``retries`` unset): a failed count says so
        self.retries = [0] * len(self.expectations)
        self.sequence = 0

    def observe(self, rid: Any, method: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.sequence += 1
        retry = is_retry(method, params)
        for i, e in enumerate(self.expectations):
            if not _matches_but_for_retries(e, method, params, headers):
                continue
            if retry and not e.retries:
                self.retries[i] += 1
                continue
            self.counts[i] += 1
            if len(self.seen[i]) < KEPT_IDS:
                self.seen[i].append((self.sequence, rid))

    def export(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "counts": list(self.counts), "retries": list(self.retries),
                "seen": [[list(x) for x in s] for s in self.seen]}

    def restore(self, data: dict[str, Any]) -> None:
        """The state ``export`` gave, for the same expectations (the caller checks that).

        A state saved before retries were counted apart has none: they are taken as
        none (the note on a failed count may then say fewer than there were)."""
        self.sequence = data["sequence"]
        self.counts = list(data["counts"])
        retries: list[Any] = data.get("retries") or []
        ok = type(retries) is list and len(retries) == len(self.counts) and all(type(r) is int and r >= 0 for r in retries)
        self.retries = [int(r) for r in retries] if ok else [0] * len(self.counts)
        self.seen = [[(n, rid) for n, rid in s] for s in data["seen"]]

    def verdicts(self) -> list[dict[str, Any]]:
        by_id = {e.id: i for i, e in enumerate(self.expectations) if e.id is not None}
        out = []
        for i, e in enumerate(self.expectations):
            seen = self.seen[i]
            n = self.counts[i]
            left_out = _retries_note(self.retries[i])
            why: list[str] = []
            if e.never and n:
                why.append(f"seen {_times(n)}, expected never")
            if e.exactly is not None and n != e.exactly:
                why.append(f"seen {_times(n)}, expected exactly {e.exactly}" + (left_out if n < e.exactly else ""))
            lo = e.atLeast if e.atLeast is not None else (1 if not (e.never or e.exactly is not None or e.atMost is not None) else None)
            if lo is not None and n < lo:
                why.append(f"seen {_times(n)}, expected at least {lo}{left_out}")
            if e.atMost is not None and n > e.atMost:
                why.append(f"seen {_times(n)}, expected at most {e.atMost}")
            for relation, other_id in (("before", e.before), ("after", e.after)):
                if other_id is None or other_id not in by_id:
                    continue
                other = self.seen[by_id[other_id]]
                if not other:
                    continue  # nothing to be in order with; the other's own count says if that is wrong
                other_name = describe(self.expectations[by_id[other_id]])
                if not seen:
                    why.append(f"expected {relation} {other_id} ({other_name}), but only that one was seen")
                elif relation == "before" and seen[0][0] > other[0][0]:
                    why.append(f"first seen as request #{seen[0][0]} (id {seen[0][1]!r}), after {other_id} ({other_name}) at #{other[0][0]}")
                elif relation == "after" and seen[0][0] < other[0][0]:
                    why.append(f"first seen as request #{seen[0][0]} (id {seen[0][1]!r}), before {other_id} ({other_name}) at #{other[0][0]}")
            entry: dict[str, Any] = {
                "expectation": label(i, e),
                "request": describe(e),
                "wanted": wanted(e),
                "count": n,
                "ids": [rid for _, rid in seen[:KEPT_IDS]],
                "verdict": "failed" if why else "passed",
            }
            if self.retries[i]:
                entry["retriesNotCounted"] = self.retries[i]
            if e.before is not None:
                entry["before"] = e.before
            if e.after is not None:
                entry["after"] = e.after
            if why:
                entry["why"] = "; ".join(why)
            out.append(entry)
        return out


def _retries_note(k: int) -> str:
    """What a count too low should add when matching retries were left out of it."""
    if not k:
        return ""
    if k == 1:
        return " (1 more matching request was an input_required retry, not counted; add `retries: true` to count retries)"
    return f" ({k} more matching requests were input_required retries, not counted; add `retries: true` to count retries)"


def failure_message(verdicts: list[dict[str, Any]]) -> str:
    """The readable text of failed expectations (for the stderr summary and pytest)."""
    failed = [v for v in verdicts if v["verdict"] == "failed"]
    lines = [f"{len(failed)} of {len(verdicts)} expectation{'s' if len(verdicts) != 1 else ''} failed:"]
    for v in failed:
        lines.append(f"  - {v['expectation']}: {v['request']} {v['wanted']}: {v['why']}")
    return "\n".join(lines)


def _not(method: Any, allowed: tuple[str, ...]) -> str:
    """What the expectation's method is instead, and the allowed one it is a typo of, if any."""
    return f", not {method!r}{did_you_mean(method, allowed)}" if type(method) is str else ""


def problems(expectations: list[Expectation]) -> list[tuple[tuple[Any, ...], str]]:
    """Static problems of an ``expectations:`` list, as (path, message)."""
    out: list[tuple[tuple[Any, ...], str]] = []
    ids: dict[str, int] = {}
    for i, e in enumerate(expectations):
        if e.id is not None:
            if e.id in ids:
                out.append((("expectations", i, "id"), f"duplicate expectation id {e.id!r} (also at expectations[{ids[e.id]}])"))
            ids.setdefault(e.id, i)
    for i, e in enumerate(expectations):
        path = ("expectations", i)
        for key in ("atLeast", "atMost", "exactly"):
            v = getattr(e, key)
            if v is not None and v < 0:
                out.append((path + (key,), f"{key} must be 0 or more"))
        if e.exactly is not None and (e.atLeast is not None or e.atMost is not None):
            out.append((path, "give either exactly or atLeast/atMost, not both"))
        if e.never and (e.exactly is not None or e.atLeast is not None or e.atMost is not None):
            out.append((path, "never: true cannot be combined with a count"))
        if e.atLeast is not None and e.atMost is not None and e.atLeast > e.atMost:
            out.append((path, f"atLeast ({e.atLeast}) is more than atMost ({e.atMost})"))
        named = (p.TOOLS_CALL, p.PROMPTS_GET)
        if e.name is not None and e.method not in named:
            out.append((path + ("name",), "name applies only to tools/call and prompts/get" + _not(e.method, named)))
        if e.uri is not None and e.method != p.RESOURCES_READ:
            out.append((path + ("uri",), "uri applies only to resources/read" + _not(e.method, (p.RESOURCES_READ,))))
        if e.arguments is not None and e.method not in named:
            out.append((path + ("arguments",), "arguments apply only to tools/call and prompts/get" + _not(e.method, named)))
        for key, pattern in (("arguments", e.arguments), ("params", e.params), ("headers", e.headers)):
            # the same matchers as `when`: an operand run could not use is refused here
            out += [(path + (key,) + sub, msg) for sub, msg in pattern_problems(pattern)]
        for key in ("before", "after"):
            other = getattr(e, key)
            if other is None:
                continue
            if other not in ids:
                known = ", ".join(sorted(ids)) or "none"
                out.append((path + (key,), f"{key} names unknown expectation id {other!r} (ids: {known})"))
            elif other == e.id:
                out.append((path + (key,), f"an expectation cannot be {key} itself"))
        if e.never and (e.before is not None or e.after is not None):
            out.append((path, "never: true cannot be combined with before/after"))
    return out
