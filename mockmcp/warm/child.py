"""What a forked child does to be a fresh process in every way its client can observe.

``become`` runs in the child right after ``fork``: its own session and process group; only fds
0, 1, 2 (the launcher's, passed over the socket) and the hand-off socket left open; the
launcher's environment, cwd, umask, limits, signal dispositions and mask; the standard streams
built anew; every random generator created at import time reseeded; ``{pid}`` and the
journal's pid the launcher's (the pid the client sees). It dies with SIGKILL within moments of
its launcher's death (the server sees the hand-off socket hang up and kills it) and of the warm
server's (the parent-death signal). Then it
runs the command line as ``python -m mockmcp`` would, runs the ``atexit`` handlers and exits.
It never returns into the server's loop.
"""

from __future__ import annotations

import atexit
import io
import os
import random
import select
import signal
import sys
import traceback
from types import FrameType
from typing import Any, Callable, Sequence

from mockmcp.verify.journal import claim_pid
from mockmcp.warm.handoff import Handoff

Run = Callable[[Sequence[str]], int]
_PR_SET_PDEATHSIG = 1
STREAMS = (0, 1, 2)  # the launcher's standard streams, which the child takes over


def die_with_parent(server: int) -> None:
    """SIGKILL this process when the warm server (its parent) dies (Linux's parent-death signal)."""
    import ctypes  # (imported by the server before it forks)

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the server still kills the child when its launcher goes
    if os.getppid() != server:
        os.kill(os.getpid(), signal.SIGKILL)  # the server died before the signal was asked for


def check_launcher(fd: int) -> None:
    """SIGKILL this process if its launcher is already gone (it gave up waiting for our pid).

    Later, the warm server watches the launcher's end of the hand-off socket and kills this
    child when it goes (no thread here: a second thread in the mock would be its only one)."""
    poll = select.poll()
    poll.register(fd, select.POLLRDHUP)  # hang-ups only: the data on it is the server's to read
    if poll.poll(0):
        os.kill(os.getpid(), signal.SIGKILL)


def reset_signals(handoff: Handoff) -> None:
    """The dispositions a fresh ``python`` spawned by the launcher's parent would have, then its mask.

    The server forks with every signal blocked (``WarmServer.start``): a signal that comes before
    this point waits, and is delivered under the fresh dispositions, never the server's handlers."""
    signal.set_wakeup_fd(-1)
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        if int(sig) in handoff.ignored:
            action: Callable[[int, FrameType | None], Any] | int | signal.Handlers = signal.SIG_IGN
        elif sig == signal.SIGINT:
            action = signal.default_int_handler
        else:
            action = signal.SIG_DFL
        try:
            signal.signal(sig, action)
        except (OSError, ValueError):
            pass  # a real-time signal the C library keeps to itself
    signal.pthread_sigmask(signal.SIG_SETMASK, [s for s in signal.valid_signals() if int(s) in handoff.blocked])


def install_streams(fds: Sequence[int], keep: int, unbuffered: bool) -> None:
    """The launcher's 0/1/2 in place, every other descriptor but ``keep`` closed, and sys.std* on them."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 65536)
    # As the interpreter builds them at start-up (the server checked that the launcher's
    # interpreter chose the same encodings as its own): newline "\n", the fd left open when the
    # object goes; stdout line-buffered on a terminal, stderr always; with PYTHONUNBUFFERED,
    # stdout and stderr written through to their fds (stdin stays buffered).
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        old = getattr(sys, name)
        encoding, errors = (old.encoding, old.errors) if old is not None else ("utf-8", "strict")
        raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        buffered: io.FileIO | io.BufferedReader | io.BufferedWriter = raw
        if fd == 0:
            buffered = io.BufferedReader(raw)
        elif not unbuffered:
            buffered = io.BufferedWriter(raw)
        new = io.TextIOWrapper(buffered, encoding=encoding, errors=errors, newline="\n",
                               line_buffering=not unbuffered and (fd == 2 or (fd == 1 and os.isatty(1))),
                               write_through=unbuffered and fd != 0)
        setattr(sys, name, new)
        setattr(sys, f"__{name}__", new)


def apply(handoff: Handoff) -> None:
    """The launcher's environment, cwd, umask and resource limits, and what its
    ``PYTHONDONTWRITEBYTECODE`` decides (``refusals.APPLIED``; ``PYTHONUNBUFFERED``: ``install_streams``)."""
    import resource

    os.environ.clear()
    os.environ.update(handoff.env)
    sys.dont_write_bytecode = bool(handoff.env.get("PYTHONDONTWRITEBYTECODE"))
    os.chdir(handoff.cwd)
    os.umask(handoff.umask)
    for name, (soft, hard) in handoff.limits.items():
        which = getattr(resource, name, None)
        if which is not None:
            resource.setrlimit(which, (soft, hard))  # checked by the server: never above its hard limit


def become(handoff: Handoff, fds: Sequence[int], sock_fd: int, generators: Sequence[random.Random], run: Run,
           server: int) -> None:
    """Turn this freshly forked process into the mock its launcher asked for; never returns."""
    status = 1
    blocking: list[bool] = []
    try:
        os.setsid()
        die_with_parent(server)
        reset_signals(handoff)
        install_streams(fds, sock_fd, unbuffered=bool(handoff.env.get("PYTHONUNBUFFERED")))
        blocking = [os.get_blocking(fd) for fd in STREAMS]
        apply(handoff)
        for generator in generators:
            generator.seed()
        claim_pid(handoff.pid)
        sys.argv = [os.path.join(os.path.dirname(os.path.dirname(__file__)), "__main__.py"), *handoff.argv]
        check_launcher(sock_fd)
        status = run(list(handoff.argv))
    except SystemExit as exc:
        status = exit_code(exc)
    except KeyboardInterrupt:
        finish(blocking)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as the interpreter ends on an uncaught Ctrl-C
        os.kill(os.getpid(), signal.SIGINT)
        os._exit(130)
    except BaseException:  # the interpreter's own last resort: print the traceback, exit 1
        traceback.print_exc()
        status = 1
    finish(blocking)
    os._exit(status)


def exit_code(exc: SystemExit) -> int:
    """The status ``sys.exit(value)`` gives at the top of a program."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def finish(blocking: Sequence[bool]) -> None:
    """The interpreter's shutdown as far as a client can see it: ``atexit`` handlers, flushed
    streams, and the standard streams' blocking mode as the launcher handed them over.

    O_NONBLOCK belongs to the open file description, shared with the client's end of each pipe:
    a direct spawn gives it back when its stream objects are collected at shutdown, which
    ``os._exit`` skips, so the child gives it back here or the client's own reads and writes
    would fail with EAGAIN after the mock ended."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    for fd, was in zip(STREAMS, blocking):
        try:
            os.set_blocking(fd, was)
        except OSError:
            pass  # the mock closed it: nothing shared is left to give back
