"""``mockmcp record -o CASSETTE [--mode M] -- CMD``: the record process, built from the one bootstrap.

The mode decides what this process is: a replay (``none``, or ``once`` with the cassette
there) is ``mockmcp run CASSETTE`` itself; a recording (``all``, ``once`` without it) hands
the real server's command, a ``cassette.Recorder`` and the cassette's writer to
``record.recording``; ``new_episodes`` with a cassette also hands ``record.episodes`` an
engine built from that cassette, to answer what it recorded.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from mockmcp.launch.boot import cannot_write, load_scenario, new_engine, open_log, server_command

if TYPE_CHECKING:
    from mockmcp.scenario.model.base import Scenario


def record(args: argparse.Namespace) -> int:
    path: str = args.output
    exists = os.path.exists(path)
    mode = args.mode
    if mode == "none" and not exists:
        print(f"mockmcp record: --mode none needs an existing cassette, and {path} does not exist", file=sys.stderr)
        return 2
    if mode == "none" or (mode == "once" and exists):
        return replay(args, path)
    import re

    from mockmcp.record.redact import Redactor

    try:
        redactor = Redactor(args.redact_key or (), args.redact or (), defaults=not args.no_default_redaction)
    except re.error as exc:  # a bad --redact pattern is the user's mistake, said plainly
        print(f"mockmcp record: bad --redact pattern: {exc}", file=sys.stderr)
        return 2
    cmd = server_command(args.cmd, "record")
    if cmd is None:
        return 2
    old = None
    if mode == "new_episodes" and exists:
        old = _load_old(path)
        if old is None:
            return 2
    import trio

    from mockmcp.record import cassette, relay
    from mockmcp.record.recording import finisher, serve_recording

    why = cannot_write(path, make_folder=True)
    if why is not None:  # (said now, not after the session it would have recorded)
        print(f"mockmcp record: cannot write the cassette {path}: {why}", file=sys.stderr)
        return 2

    opts = cassette.Options(redactor, keep_timing=args.keep_timing, as_modern=args.as_version is not None,
                            source=os.path.basename(cmd[0]))
    rec = cassette.Recorder(redactor)  # it learns the secrets as the lines pass
    finish = finisher(path, rec, opts, old[0] if old is not None else None)
    serve: Callable[[], Awaitable[int]]
    if old is not None:
        from mockmcp.record.episodes import serve_new_episodes

        serve = partial(serve_new_episodes, cmd, rec, new_engine(old[1]), startup_wait=args.startup_wait,
                        grace=args.grace, log=open_log(args.log_level), finish=finish)
    else:
        serve = partial(serve_recording, cmd, rec, startup_wait=args.startup_wait, grace=args.grace, finish=finish)
    try:
        status = trio.run(serve)
    except relay.CommandError as exc:
        print(f"mockmcp record: {exc}", file=sys.stderr)
        return 2
    return status


def replay(args: argparse.Namespace, path: str) -> int:
    """The cassette served as ``mockmcp run CASSETTE`` would serve it, with record's own options."""
    from mockmcp.launch.run import run

    ns = argparse.Namespace(
        scenario=path, log_level=args.log_level, time_scale=1.0, seed=None, grace=args.grace, max_line_bytes=None,
        journal=args.journal, report=args.report, strict=args.strict, allow_absolute_paths=False, no_cache=False,
    )
    return run(ns)


def _load_old(path: str) -> tuple[dict[str, Any], Scenario] | None:
    """The existing cassette as data (to merge into) and as a scenario (to replay); problems printed."""
    from mockmcp.scenario.plainload import parse_yaml

    loaded = load_scenario(path, use_cache=False)
    if loaded is None:
        return None
    with open(path, encoding="utf-8") as fh:
        data, _ = parse_yaml(fh.read(), path)
    return data, loaded[0]


__all__ = ["record", "replay"]
