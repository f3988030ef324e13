"""Problems found in a scenario, located by file, line, column and JSON path."""

from __future__ import annotations

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


@attrs.frozen
class Problem:
    file: str
    line: int
    column: int
    message: str
    path: tuple[Any, ...] = ()
    level: str = "error"

    def __str__(self) -> str:
        prefix = "" if self.level == "error" else f"{self.level}: "
        return f"{self.file}:{self.line}:{self.column}: {prefix}{self.message} (at {format_path(self.path)})"


class LoadError(Exception):
    """A scenario could not be loaded; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems
