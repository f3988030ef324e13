"""docs/cli.md documents every command and option the parser accepts (so it cannot drift)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mockmcp.cli.main import _parser

DOC = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()


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


def _section(name: str) -> str:
    return next(s for s in DOC.split("\n## ")[1:] if s.split("`", 2)[1].split()[1] == name)


def test_documented_defaults_are_the_real_defaults() -> None:
    """A table row `| `--opt X` | `default` | ... |` states what the parser really uses."""
    import re

    checked = 0
    for name, parser in _commands().items():
        by_option = {opt: a for a in parser._actions for opt in a.option_strings}
        for opt, default in re.findall(r"^\| `(--[a-z-]+)[^`]*` \| `([^`]+)` \|", _section(name), re.M):
            real = by_option[opt].default
            assert (float(default) == real) if isinstance(real, (int, float)) else (default == real), (name, opt, default, real)
            checked += 1
    assert checked >= 5


def test_every_positional_argument_is_in_its_heading() -> None:
    for name, parser in _commands().items():
        heading = _section(name).splitlines()[0]
        for action in parser._actions:
            if not action.option_strings:
                assert (action.metavar or action.dest).upper() in heading, (name, action.dest, heading)


def test_documented_exit_statuses_are_the_real_ones() -> None:
    from mockmcp.cli.main import EXIT_SIGINT, EXIT_SIGPIPE

    assert f"exit status {EXIT_SIGPIPE} (128 + SIGPIPE" in DOC
    assert f"status {EXIT_SIGINT} (128 + SIGINT)" in DOC
    assert "exits 2" in DOC  # bare `mockmcp`


def test_documented_demo_verdicts_are_the_real_ones() -> None:
    from mockmcp.cli import demo

    assert f"`--timeout S` | `{demo.TIMEOUT:g}`" in DOC
    assert f"at\n  most {demo.MAX_ROUNDS} rounds" in DOC or f"most {demo.MAX_ROUNDS} rounds" in DOC.replace("\n  ", " ")
    assert f"dies more than {demo.MAX_RESTARTS} times" in DOC
