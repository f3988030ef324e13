"""docs/cli.md documents every command and option the parser accepts (so it cannot drift)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mockmcp.cli import _parser

DOC = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_has_a_section() -> None:
    for name in _commands():
        assert f"## `mockmcp {name}" in DOC, f"docs/cli.md has no section for `mockmcp {name}`"


def test_every_option_is_documented_in_its_command_section() -> None:
    sections = {s.split("`", 2)[1].split()[1]: s for s in DOC.split("\n## ")[1:]}
    for name, parser in _commands().items():
        for action in parser._actions:
            for opt in action.option_strings:
                if opt in ("-h", "--help"):
                    continue
                assert f"`{opt}" in sections[name], f"`mockmcp {name} {opt}` is not documented in docs/cli.md"
