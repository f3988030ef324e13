"""The one shutdown-signal watcher (mockmcp/shells/signals.py): its two forms on trio, and that no other
module opens a signal receiver of its own.

Signals are raised in this process with ``os.kill(os.getpid(), ...)`` only while the watcher's
handlers are installed (they queue the signal for trio); the end-to-end behaviour (exit statuses,
log lines) is covered through real processes in test_cli.py and at the end of this file.
"""

from __future__ import annotations

import ast
import os
import pathlib
import signal
import subprocess
import sys
import time
from functools import partial

import pytest
import trio

from mockmcp.shells import signals

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "mockmcp"


class Lines:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def __call__(self, level: str, text: str) -> None:
        self.lines.append((level, text))


def raise_signal(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)


# ---------------------------------------------------------------- the layout rule


def receiver_openers(source: str) -> list[int]:
    """Lines of ``source`` that name ``open_signal_receiver`` (called, imported or aliased)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "open_signal_receiver":
            found.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "open_signal_receiver":
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "open_signal_receiver" for a in node.names):
            found.append(node.lineno)
    return found


def test_only_the_signals_module_opens_a_signal_receiver():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "shells" / "signals.py":
            continue
        lines = receiver_openers(path.read_text(encoding="utf-8"))
        if lines:
            offenders[str(path.relative_to(PACKAGE.parent))] = lines
    assert not offenders, f"open a signal receiver through mockmcp.shells.signals, not here: {offenders}"
    assert receiver_openers((PACKAGE / "shells" / "signals.py").read_text(encoding="utf-8"))


def test_the_layout_check_sees_every_spelling():
    assert receiver_openers("import trio\nwith trio.open_signal_receiver(2) as r: pass\n") == [2]
    assert receiver_openers("from trio import open_signal_receiver\n") == [1]
    assert receiver_openers("from trio import open_signal_receiver as o\n") == [1]
    assert receiver_openers("import signal\nsignal.signal(2, signal.SIG_IGN)\n") == []


# ---------------------------------------------------------------- the watcher on trio


def test_watched_signals():
    assert signals.watched() == (signal.SIGINT, signal.SIGTERM)
    assert signals.watched(ignore_sigterm=True) == (signal.SIGINT,)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_watch_cancels_on_the_first_signal_logs_it_and_lets_go(sig):
    log = Lines()
    seen = {}

    async def main() -> None:
        before = signal.getsignal(sig)  # (inside the run: trio has its own SIGINT handler)
        async with trio.open_nursery() as nursery:
            # started: the handlers are in place when start returns (nothing scheduled first)
            await nursery.start(partial(signals.watch, nursery.cancel_scope, log=log))
            seen["installed"] = signal.getsignal(sig) is not before
            raise_signal(sig)
            await trio.sleep(30)  # cancelled by the signal
        seen["restored"] = signal.getsignal(sig) is before

    start = time.monotonic()
    trio.run(main)
    assert time.monotonic() - start < 10
    assert seen == {"installed": True, "restored": True}
    assert log.lines == [("info", f"received {sig.name}; shutting down")]


def test_watch_without_a_log_is_silent_and_ignore_sigterm_leaves_sigterm_alone():
    before = signal.getsignal(signal.SIGTERM)
    seen = {}

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(signals.watch, nursery.cancel_scope, ignore_sigterm=True))
            seen["sigterm"] = signal.getsignal(signal.SIGTERM) is before
            raise_signal(signal.SIGINT)
            await trio.sleep(30)

    trio.run(main)
    assert seen == {"sigterm": True}


def test_the_receiver_form_holds_a_second_signal_until_the_block_ends():
    """Open around a whole session, shutdown included: a second signal does not act midway
    through the shutdown; trio re-delivers it to the previous disposition when the block ends."""
    log = Lines()
    earlier: list[int] = []
    seen = {}

    async def main() -> None:
        with signals.shutdown_signals() as received:
            # open before anything is served (the HTTP URL, a proxy session)
            seen["installed"] = signal.getsignal(signal.SIGTERM) is not counting
            async with trio.open_nursery() as nursery:
                nursery.start_soon(received.cancel_on_first, nursery.cancel_scope, log)
                await trio.sleep(0)
                raise_signal(signal.SIGTERM)
                await trio.sleep(30)  # cancelled by the signal
            raise_signal(signal.SIGTERM)  # during the shutdown
            with trio.CancelScope(shield=True):
                await trio.sleep(0.05)
            seen["held"] = list(earlier)
        seen["redelivered"] = list(earlier)
        seen["restored"] = signal.getsignal(signal.SIGTERM) is counting

    def counting(signum: int, frame: object) -> None:
        earlier.append(signum)

    previous = signal.signal(signal.SIGTERM, counting)
    try:
        trio.run(main)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == {"installed": True, "held": [], "redelivered": [signal.SIGTERM], "restored": True}
    assert log.lines == [("info", "received SIGTERM; shutting down")]  # the second one is not read


def test_a_signal_before_the_waiter_runs_is_not_lost():
    """The receiver queues what arrives between opening it and the first read."""

    async def main() -> bool:
        with signals.shutdown_signals() as received:
            raise_signal(signal.SIGINT)
            with trio.move_on_after(10) as scope:
                await received.cancel_on_first(scope)
            return scope.cancel_called

    start = time.monotonic()
    assert trio.run(main) is True
    assert time.monotonic() - start < 5


# ---------------------------------------------------------------- through the real process


def test_http_mock_logs_the_signal_and_exits_0(tmp_path):
    """``run --http``: the URL line, then SIGTERM: the watcher's line on stderr, status 0."""
    proc = subprocess.Popen([sys.executable, "-m", "mockmcp", "run", "default", "--http", "0", "--log-level", "info"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = proc.stdout.readline()  # type: ignore[union-attr]
        assert url.startswith(b"http://"), proc.stderr.read()  # type: ignore[union-attr]
        proc.send_signal(signal.SIGTERM)  # at once: the handler was installed before the URL
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert b"received SIGTERM; shutting down" in err and b"Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_a_shutdown_under_way_absorbs_only_the_first_signal_after_serving_ended():
    """``shutdown_under_way``: during start-up a signal means what it meant before (here, a recording
    handler standing for the default action); once serving has ended, the first one is absorbed (the
    report still gets written) and the next goes to the disposition from before; when the block
    ends, that disposition is back."""
    seen = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with signals.shutdown_under_way() as under_way:
            signal.raise_signal(signal.SIGTERM)  # start-up: not absorbed
            assert seen == [signal.SIGTERM]
            signal.signal(signal.SIGTERM, under_way.handle)  # (the first call restored the previous one)
            under_way.ended = True
            signal.raise_signal(signal.SIGTERM)  # the first after serving: absorbed
            assert seen == [signal.SIGTERM]
            signal.raise_signal(signal.SIGTERM)  # a second: what it meant before
            assert seen == [signal.SIGTERM, signal.SIGTERM]
        with signals.shutdown_under_way() as under_way:
            under_way.first_taken = True  # the watcher acted on one while serving
            under_way.ended = True
            signal.raise_signal(signal.SIGTERM)
            assert len(seen) == 3
        signal.raise_signal(signal.SIGTERM)
        assert len(seen) == 4  # the disposition from before is back
    finally:
        signal.signal(signal.SIGTERM, before)
