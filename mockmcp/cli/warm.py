"""``mockmcp warm start | stop | status | argv | serve``: the opt-in fork server (docs/warm.md).

``argv`` prints, as a JSON list, the command prefix a client spawns instead of ``mockmcp``: the
interpreter with ``-S``, the launcher's path and the runtime folder (``--warm-dir=``). The launcher hands its process to the warm
server when one runs and answers, and otherwise runs ``python -m mockmcp`` itself, so the prefix
is safe to use whether or not a server was started.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Sequence

from mockmcp.warm.control import NotStarted, launcher_argv, running, serve, start, stop
from mockmcp.warm.paths import UnsafeFolder, refuse_relative, warm_paths

HELP = "keep a warm process that forks a mock per spawn in about 20 ms (opt-in; see docs/warm.md)"
EXAMPLES = (
    "  mockmcp warm start\n"
    "  mockmcp warm argv      # [\"python\", \"-S\", \"-P\", \"-c\", \"...import launcher...\", \"--warm-dir=...\"]: spawn this + run ARGS\n"
    "  mockmcp warm status\n  mockmcp warm stop\n"
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    warm = sub.add_parser("warm", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                          epilog="examples:\n" + EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = warm.add_subparsers(dest="warm_action", metavar="ACTION", title="actions", required=True)
    actions.add_parser("start", help="start the warm server (detached) unless one runs; print its pid and socket")
    actions.add_parser("stop", help="stop the warm server (its running mocks get 2 s to end)")
    actions.add_parser("status", help="say whether a warm server runs (exit status 0) or not (1)")
    actions.add_parser("argv", help="print the command prefix to spawn instead of `mockmcp`, as a JSON list")
    serving = actions.add_parser("serve", help="serve in the foreground (what `start` runs detached)")
    serving.add_argument("--lifeline", type=int, metavar="FD",
                         help="stop at end of file on descriptor FD, a pipe whose write end the starting process holds"
                              " (the pytest plugin's run: killed, it takes its server with it)")


def warm(args: argparse.Namespace, run: Callable[[Sequence[str]], int], prime: Callable[[], None]) -> int:
    """One ``warm`` action; ``run`` is the command line's entry (what a forked child runs), ``prime``
    what the server does once before it forks so that its children need not (``cli.main.prime_run_parser``)."""
    paths = warm_paths()
    try:
        match args.warm_action:
            case "argv":
                refuse_relative(paths.folder)
                print(json.dumps(launcher_argv()))
                return 0
            case "start":
                pid = start(paths)
                print(f"mockmcp warm: running, pid {pid}, socket {paths.socket}")
                return 0
            case "status":
                found = running(paths)
                if found is None:
                    print(f"mockmcp warm: not running (socket {paths.socket})")
                    return 1
                print(f"mockmcp warm: running, pid {found}, socket {paths.socket}")
                return 0
            case "stop":
                print("mockmcp warm: stopped" if stop(paths) else "mockmcp warm: was not running")
                return 0
            case "serve":
                if args.lifeline is not None and not _open_descriptor(args.lifeline):
                    print(f"mockmcp warm: --lifeline {args.lifeline}: not an open descriptor of this process",
                          file=sys.stderr)
                    return 2
                prime()
                return serve(paths, run, args.lifeline)
    except (NotStarted, UnsafeFolder) as exc:
        print(f"mockmcp warm: {exc}", file=sys.stderr)
        return 1
    return 2


def _open_descriptor(fd: int) -> bool:
    """Whether ``fd`` is open in this process and not one of the standard streams."""
    try:
        os.fstat(fd)
    except (OSError, OverflowError):
        return False
    return fd > 2
