"""The fenced code blocks of the project's Markdown pages, read one way for every docs test.

CommonMark fences of backticks or tildes, possibly indented inside a list item (the indent is
taken off the body); the info string's first word is the language, the rest its flags
(``yaml fragment``, ``sh template``). A block whose first line is ``# file: NAME`` is a file the
page asks the reader to save.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from support.paths import ROOT

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
FILE_MARKER = re.compile(r"^\s*(?:#|//)\s*file:\s*(?P<name>[\w.-]+)\s*$")


class Fenced(NamedTuple):
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    flags: tuple[str, ...]
    text: str

    @property
    def page(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def file_name(self) -> str | None:
        """NAME when the block starts with a ``# file: NAME`` marker."""
        m = FILE_MARKER.match(self.text.split("\n", 1)[0])
        return m["name"] if m else None


def doc_pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def fenced_blocks(path: Path) -> list[Fenced]:
    """The page's fenced blocks that name a language, in order."""
    out: list[Fenced] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].split()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if info:
            out.append(Fenced(path, i + 1, info[0], tuple(info[1:]), "\n".join(body) + "\n"))
        i = j + 1
    return out
