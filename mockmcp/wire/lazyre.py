"""Regular expressions compiled on first use, not at import.

Every spawn imports the core, and ``re.compile`` of a pattern runs Python's
regex compiler (pure Python): the patterns only rare inputs need (a line nested
too deep, a template being compiled, a ``$regex`` being checked) would each cost
every spawn a measurable share of its start-up if compiled at import. Sans-I/O.
"""

from __future__ import annotations

import re


class LazyPattern:
    """``re.compile(pattern, flags)``, done the first time ``get`` is called."""

    __slots__ = ("_pattern", "_flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._pattern, self._flags)
        return compiled
