"""``mockmcp warm start | stop | status | argv | serve``: the opt-in fork server (docs/warm.md).

``argv`` prints, as a JSON list, the command prefix a client spawns instead of ``mockmcp``: the
interpreter with ``-S``, the launcher's path and the runtime folder (``--warm-dir=``). The launcher hands its process to the warm
server when one runs and answers, and otherwise runs ``python -P -m mockmcp`` itself, so the prefix
is safe to use whether or not a server was started.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from typing import Callable, Sequence

from mockmcp.warm.control import NotStarted, launcher_argv, running, serve, start, stop
from mockmcp.warm.paths import UnsafeFolder, UnusablePath, refuse_relative, warm_paths

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
    starting = actions.add_parser("start", help="start the warm server (detached) unless one runs; print its pid and socket")
    starting.add_argument("--lifeline", type=int, metavar="FD",
                          help="tie the server to descriptor FD, a pipe's read end or a socket whose other end only the"
                               " caller holds: at its end of file (the caller ended, however) the server stops and"
                               " removes its folder; refused when a server already runs there")
    actions.add_parser("stop", help="stop the warm server (its running mocks get 2 s to end)")
    actions.add_parser("status", help="say whether a warm server runs (exit status 0) or not (1)")
    actions.add_parser("argv", help="print the command prefix to spawn instead of `mockmcp`, as a JSON list")
    serving = actions.add_parser("serve", help="serve in the foreground (what `start` runs detached)")
    serving.add_argument("--lifeline", type=int, metavar="FD",
                         help="stop at end of file on descriptor FD, a pipe's read end or a socket whose other end the"
                              " starting process holds (the pytest plugin's run: killed, it takes its server with it)")


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
                problem = "" if args.lifeline is None else _lifeline_problem(args.lifeline)
                if problem:
                    print(f"mockmcp warm: {problem}", file=sys.stderr)
                    return 2
                pid = start(paths, lifeline=args.lifeline)
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
                problem = "" if args.lifeline is None else _lifeline_problem(args.lifeline)
                if problem:
                    print(f"mockmcp warm: {problem}", file=sys.stderr)
                    return 2
                prime()
                return serve(paths, run, args.lifeline)
    except (NotStarted, UnsafeFolder) as exc:
        print(f"mockmcp warm: {exc}", file=sys.stderr)
        return 1
    except UnusablePath as exc:
        print(f"mockmcp warm: {exc}", file=sys.stderr)
        return 2
    return 2


def _lifeline_problem(fd: int) -> str:
    """Why descriptor ``fd`` cannot be a lifeline (empty: it can). It must be open, not a standard
    stream, and a pipe or a socket: those report their other end's closing as an end of file the
    server can wait for (a regular file or /dev/null cannot be waited on at all)."""
    try:
        mode = os.fstat(fd).st_mode
    except (OSError, OverflowError):
        return f"--lifeline {fd}: not an open descriptor of this process"
    if fd <= 2:
        return f"--lifeline {fd}: a standard stream; give a descriptor of its own, 3 or more"
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return f"--lifeline {fd}: not a pipe or a socket (a pipe's read end, or a socket whose other end the caller holds)"
    return ""
