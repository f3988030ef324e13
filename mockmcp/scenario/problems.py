"""Problems found in a scenario, located by file, line, column and JSON path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs


def format_path(path: tuple[Any, ...]) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""`` when none is as close as
    ``cutoff`` (difflib's similarity ratio).

    Only error paths call it, so difflib is imported here, not at start-up.
    """
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


@attrs.frozen
class Problem:
    """One problem. ``line`` 0 means the file as a whole (it could not be read or
    found), printed as ``FILE: message`` without a position or a JSON path."""

    file: str
    line: int
    column: int
    message: str
    path: tuple[Any, ...] = ()
    level: str = "error"

    def __str__(self) -> str:
        prefix = "" if self.level == "error" else f"{self.level}: "
        if self.line == 0:
            return f"{self.file}: {prefix}{self.message}"
        return f"{self.file}:{self.line}:{self.column}: {prefix}{self.message} (at {format_path(self.path)})"


class LoadError(Exception):
    """A scenario could not be loaded; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems
