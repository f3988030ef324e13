"""What the impure template helpers read: ``uuid()``, ``now()``, ``counter()``.

Templates are pure functions of the request; these three are not, so they read
an ``Effects`` object that the engine puts in every request's template scope.
Its randomness and clock are handed in by the shell (``launch.boot.new_engine``: the
``--seed``ed generator and the wall clock), so the core stays sans-I/O and a
seeded run mints the same ids. Counters live per process, like the session.
Every method is total within the bounds ``templates`` promises: it returns a
JSON value or raises ``TemplateError`` (answered with -32602).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from mockmcp.scenario.templates import TemplateError, to_text

MAX_COUNTERS = 10_000  # distinct counter names per process (names may come from requests)


class Bits(Protocol):
    """What ``uuid()`` needs of a random generator (``random.Random`` fits)."""

    def getrandbits(self, k: int, /) -> int: ...


class Effects:
    __slots__ = ("rng", "clock", "counters")

    def __init__(self, rng: Bits, clock: Callable[[], float] | None) -> None:
        self.rng = rng
        self.clock = clock
        self.counters: dict[str, int] = {}

    def uuid(self) -> str:
        """A random (version 4) UUID from the seeded generator."""
        n = self.rng.getrandbits(128)
        n = (n & ~(0xF000 << 64)) | (0x4000 << 64)  # version 4
        n = (n & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
        h = f"{n:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def now(self, unit: Any = None) -> str | int:
        """The time: ISO 8601 UTC text (``2026-12-01T10:58:05.123Z``), or ``now('ms')`` / ``now('s')`` epoch numbers."""
        if self.clock is None:
            raise TemplateError("the clock is not available here")
        t = self.clock()
        if unit == "ms":
            return int(t * 1000)
        if unit == "s":
            return int(t)
        if unit is not None:
            raise TemplateError(f"unit must be 'ms' or 's', not {to_text(unit)[:20]!r}")
        from datetime import datetime, timezone  # 7 ms to import: only scenarios that ask the time pay it

        return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def counter(self, name: Any = "default") -> int:
        """1, 2, 3... per name, per process (server-minted handles: ``basket-{{ counter('basket') }}``)."""
        key = to_text(name)
        if len(key) > 256:
            raise TemplateError("a counter name has at most 256 characters")
        value = self.counters.get(key)
        if value is None:
            if len(self.counters) >= MAX_COUNTERS:
                raise TemplateError(f"more than {MAX_COUNTERS} counter names")
            value = 0
        self.counters[key] = value + 1
        return value + 1
