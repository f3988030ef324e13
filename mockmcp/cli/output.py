"""The printing commands' stdout: a write it refuses ends the command with one line, not a traceback.

``mockmcp schema > /dev/full``, a report piped to a disk that filled up, a terminal that went
away (EIO): each made ``print`` raise ``OSError`` from deep inside the command, and the user got a
traceback, or, for a failure at the interpreter's last flush, a line about an ignored exception.
An ``OSError`` alone cannot say whether it came from stdout or from a file the command opened
(the journal it reads, the page it writes), and those already have messages of their own; so
stdout's raw file raises an exception that says where it came from, and ``printed`` turns it
into one line on stderr and status 1. Only a printing command imports this module: ``run``'s
spawn does not pay for it.

A closed pipe stays ``BrokenPipeError``: a reader that left is not an error (status 141, quietly).
``run``, ``proxy``, ``record`` and ``warm serve`` speak the protocol on stdout through their shells,
which own those writes; this is for every other command line, ``--help`` and ``--version`` too
(argparse drops an ``OSError`` from its own writes: ``mockmcp --help > /dev/full`` said nothing
and exited 0).
"""

from __future__ import annotations

import io
import os
import sys
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from typing_extensions import Buffer


class StdoutRefused(Exception):
    """stdout refused a write (a full disk, a device error): what the command printed is lost."""

    def __init__(self, reason: OSError) -> None:
        super().__init__(reason.strerror or str(reason))


class _StdoutFile(io.FileIO):
    """fd 1, whose failed writes say they were stdout's."""

    def write(self, data: Buffer, /) -> int:
        try:
            return super().write(data)
        except (BrokenPipeError, BlockingIOError, InterruptedError):
            raise
        except OSError as exc:
            raise StdoutRefused(exc) from exc


def printed(command: Callable[[], int]) -> int:
    """``command``'s status, with its output flushed; 1, and one line on stderr, when stdout
    refused a write. A ``BrokenPipeError`` goes on to the caller, as any other exception does.

    Only the interpreter's own stdout is guarded: a stream a caller put in its place (a test's
    capture, ``contextlib.redirect_stdout``) is theirs, and is left as it is; the interpreter's
    is put back once the command is done, for a caller that runs ``cli.main`` in its process."""
    real = sys.__stdout__
    if real is None or sys.stdout is not real:
        return command()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_StdoutFile(1, "w", closefd=False)),
        encoding=real.encoding,
        errors=real.errors,
        line_buffering=bool(real.line_buffering),
    )
    try:
        try:
            status = command()
        finally:
            sys.stdout.flush()  # also when argparse ends the process (--help, --version)
    except StdoutRefused as exc:
        null = os.open(os.devnull, os.O_WRONLY)  # so that the interpreter's last flush cannot fail again
        os.dup2(null, 1)
        os.close(null)
        print(f"mockmcp: cannot write to stdout: {exc} (the output is lost)", file=sys.stderr)
        return 1
    finally:
        sys.stdout = real
    return status
