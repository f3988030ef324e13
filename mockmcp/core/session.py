"""What one mock server remembers between requests, in one place.

The revision is stateless, but a mock needs a little memory of its own: the
ids in flight (a reused id is an error), the open ``subscriptions/listen``
streams and an index of them by event (so delivering an event costs the
number of streams that want it, not the number open), the counters of rule
targeting (``nth``/``every``/``first``/``after``, ``sequence``), the
scenario's named state, whether a legacy handshake happened, and the requests
no rule answered (for the verifier). Today a session lives as long as its
process. Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Iterator

from mockmcp.wire import protocol as p
from mockmcp.core.serverrequests import LegacyState


class Subscription:
    """One open ``subscriptions/listen`` stream and the notifications it was granted."""

    __slots__ = ("id", "honored", "log_level")

    def __init__(self, id: Any, honored: dict[str, Any], log_level: str | None = None) -> None:
        self.id = id
        self.honored = honored
        self.log_level = log_level  # the listen request's logLevel (log messages sent on the stream)

    def events(self) -> Iterator[tuple[str, str | None]]:
        """(event, uri) keys this stream listens to; uri only for ``resources/updated``."""
        for event, field in p.EVENT_FILTER_FIELD.items():
            if event == "resources/updated":
                for uri in self.honored.get(field) or ():
                    yield event, uri
            elif self.honored.get(field):
                yield event, None


class Session:
    """Per-session state; its methods are the only code that changes it."""

    def __init__(self, initial_state: str) -> None:
        self.state = initial_state
        self.in_flight: dict[Any, str] = {}  # request id -> method
        self.requests_seen = 0
        self.legacy_initialized = False
        self.legacy = LegacyState()  # what a handshake-era session remembers (serverrequests.py)
        self.unmatched: list[dict[str, Any]] = []  # requests no rule answered, with near misses
        self._subscriptions: dict[Any, Subscription] = {}
        # (event, uri) -> subscription ids, in the order they opened (dicts keep order)
        self._listeners: dict[tuple[str, str | None], dict[Any, None]] = {}
        self._matches: dict[int, int] = {}  # id(rule) -> requests it matched
        self._rules: dict[int, object] = {}  # id(rule) -> the rule, for as long as its counts live
        self._sequence_use: dict[int, tuple[object, int]] = {}  # answers taken from its sequence
        # One-shot overrides armed over the control channel (``armed.Armed``), consulted first.
        self.armed: list[Any] = []

    # ------------------------------------------------------------ requests

    def begin(self, request_id: Any, method: str) -> None:
        self.in_flight[request_id] = method

    def finished(self, request_id: Any) -> None:
        """A request ended (answered or cancelled): its id is free, its stream closed."""
        self.in_flight.pop(request_id, None)
        sub = self._subscriptions.pop(request_id, None)
        if sub is not None:
            for key in sub.events():
                listeners = self._listeners.get(key)
                if listeners is not None:
                    listeners.pop(request_id, None)
                    if not listeners:
                        del self._listeners[key]

    # ------------------------------------------------------------ subscriptions

    def subscribe(self, sub: Subscription) -> None:
        self._subscriptions[sub.id] = sub
        for key in sub.events():
            self._listeners.setdefault(key, {})[sub.id] = None

    @property
    def subscriptions(self) -> dict[Any, Subscription]:
        return self._subscriptions

    def listeners(self, event: str, uri: str | None, only: Any = None, has_only: bool = False) -> list[Any]:
        """The ids of the open streams that want this event (just ``only``, when given)."""
        ids = self._listeners.get((event, uri if event == "resources/updated" else None))
        if not ids:
            return []
        if has_only:
            return [only] if only in ids else []
        return list(ids)

    # ------------------------------------------------------------ rule counters

    def count_match(self, rule: object) -> int:
        """Count one more request matched by ``rule``; the new count."""
        key = id(rule)
        count = self._matches.get(key)
        if count is None:
            self._rules[key] = rule  # holds the rule, so its id is never another object's
            count = 0
        count += 1
        self._matches[key] = count
        return count

    def match_counts(self) -> list[tuple[object, int]]:
        """Every rule that matched a request so far, with its count (read by the control channel)."""
        return [(self._rules[key], count) for key, count in self._matches.items()]

    def take_sequence(self, rule: object) -> int:
        """How many answers ``rule``'s sequence gave before this one."""
        entry = self._sequence_use.get(id(rule))
        used = 0 if entry is None else entry[1]
        self._sequence_use[id(rule)] = (rule, used + 1)
        return used

    def set_state(self, state: str) -> None:
        self.state = state

    # ------------------------------------------------------------ kept across processes (--session)

    def export_counters(self, rules: list[object]) -> dict[str, list[int]]:
        """Rule counters by the rule's place in ``rules``: {index: [matched, sequence answers]}."""
        out = {}
        for i, rule in enumerate(rules):
            matched = self._matches.get(id(rule), 0)
            used = self._sequence_use.get(id(rule), (rule, 0))[1]
            if matched or used:
                out[str(i)] = [matched, used]
        return out

    def import_counters(self, rules: list[object], counters: dict[str, list[int]]) -> None:
        for key, (matched, used) in counters.items():
            rule = rules[int(key)]
            self._rules[id(rule)] = rule
            self._matches[id(rule)] = matched
            self._sequence_use[id(rule)] = (rule, used)
