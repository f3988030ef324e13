"""Command line: ``mockmcp run | check | list | demo``.

Imports are deferred to the subcommand that needs them: ``run`` is on every
test's critical path (suites spawn the mock per test), so it loads trio and the
core but not yaml or cattrs when the scenario is already in the load cache.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="mockmcp",
        description="A stdio mock MCP server (revision 2026-07-28) that answers from YAML scenarios.",
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="serve a scenario on stdin/stdout")
    run.add_argument("scenario", help="a scenario file, or the name of a bundled scenario (see `mockmcp list`)")
    run.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error", "quiet"],
                     help="how much to log on stderr (default: warning)")
    run.add_argument("--time-scale", type=float, default=1.0,
                     help="multiply every scripted delay by this factor (0.1 runs ten times faster)")
    run.add_argument("--seed", type=int, default=None, help="seed for random delays and probabilistic rules")
    run.add_argument("--grace", type=float, default=1.0,
                     help="seconds to finish scripted replies after stdin closes (default: 1)")
    run.add_argument("--max-line-bytes", type=int, default=None,
                     help="longest accepted input line in bytes (default: 4 MiB)")
    run.add_argument("--journal", metavar="FILE", help="append every message in both directions to FILE (JSON Lines)")
    run.add_argument("--report", metavar="FILE", help="write the verification report (JSON) to FILE at exit")
    run.add_argument("--strict", action="store_true",
                     help="exit non-zero if an expectation failed or the client broke a rule")
    run.add_argument("--allow-absolute-paths", action="store_true",
                     help="let the scenario reference files outside its folder by absolute path")
    run.add_argument("--no-cache", action="store_true", help="do not use or write the scenario load cache")

    check = sub.add_parser("check", help="validate scenario files")
    check.add_argument("scenarios", nargs="+", metavar="SCENARIO")
    check.add_argument("--allow-absolute-paths", action="store_true")

    sub.add_parser("list", help="list the bundled scenarios")

    demo = sub.add_parser("demo", help="spawn the mock, drive it with a small client and print the exchange")
    demo.add_argument("scenario", nargs="?", default="default")

    schema = sub.add_parser("schema", help="print the JSON Schema of the scenario format")
    schema.add_argument("--indent", type=int, default=2)

    journal = sub.add_parser("journal", help="print a journal file as a readable transcript")
    journal.add_argument("file")
    journal.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        from .run import run

        return run(args)
    if args.command == "check":
        return _check(args)
    if args.command == "list":
        return _list()
    if args.command == "demo":
        from .demo import demo

        return demo(args.scenario)
    if args.command == "schema":
        import json

        from .schema import scenario_schema

        print(json.dumps(scenario_schema(), indent=args.indent))
        return 0
    if args.command == "journal":
        from .journal import print_transcript

        return print_transcript(args.file, color=args.color)
    return 2  # pragma: no cover - argparse enforces the choices


def _check(args: argparse.Namespace) -> int:
    from .loader import load
    from .problems import LoadError

    status = 0
    for name in args.scenarios:
        try:
            _, warnings = load(name, allow_absolute=args.allow_absolute_paths, use_cache=False)
        except LoadError as exc:
            for problem in exc.problems:
                print(problem)
            status = 1
            continue
        for w in warnings:
            print(w)
        print(f"{name}: ok", file=sys.stderr)
    return status


def _list() -> int:
    from .loadcache import bundled_dir, bundled_names

    names = bundled_names()
    width = max(map(len, names), default=0)  # one column however long the names get
    for name in names:
        print(f"{name:<{width}}  {describe(bundled_dir() / f'{name}.yaml')}")
    return 0


def describe(path: os.PathLike[str] | str) -> str:
    """A scenario's one-line description: its ``description`` key, else its first comment."""
    first_comment = ""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("description:"):
                value = line.split(":", 1)[1].strip().strip("'\"")
                if value:
                    return value
            if not first_comment and line.startswith("#"):
                first_comment = line.lstrip("# ").strip()
    return first_comment


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
