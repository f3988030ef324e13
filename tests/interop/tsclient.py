"""The official TypeScript client, installed on demand from the committed lockfile.

The README's test command is the only step a fresh clone needs, so the suite
installs what its TypeScript tests run: ``npm ci`` in tests/interop/ts, from
package-lock.json, exactly the versions committed. It runs once per lockfile:
a stamp inside node_modules holds the lockfile's SHA-256, so a later run (or an
xdist worker after the first) only hashes one file. Workers of one run, and two
runs in one checkout, take a file lock first, so one installs and the others
wait for it instead of installing into the same folder at once.

Where Node.js or npm is missing, or too old, this raises ``ClientUnavailable``
with one line that names what to install: the TypeScript tests then fail with
it, never skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TS_DIR = Path(__file__).resolve().parent / "ts"
TS_PACKAGE = "@modelcontextprotocol/client"
LOCK = ".npm-ci.lock"  # not in node_modules: `npm ci` empties it while the lock is held
STAMP = ".mockmcp-lockfile-sha256"  # in node_modules, so `npm ci` (which empties it) removes a stale one
MIN_NODE = 20
NEEDED = (f"Node.js >= {MIN_NODE} and npm are needed for the TypeScript interop tests:"
          " apt-get install nodejs npm")

_ready: set[Path] = set()


class ClientUnavailable(RuntimeError):
    """The client's runtime or packages cannot be had; the message says what to install."""


def ensure(ts_dir: Path = TS_DIR, package: str = TS_PACKAGE) -> None:
    """Make the client in ``ts_dir`` runnable: check Node and npm, ``npm ci`` unless the stamp matches.

    Other npm folders of the suite (the real servers it records, the conformance suite, the
    mockmcp-js package's dev dependencies) are installed the same way, each from its own
    lockfile, naming the ``package`` whose presence proves the install."""
    if ts_dir in _ready:
        return
    check_node()
    digest = hashlib.sha256((ts_dir / "package-lock.json").read_bytes()).hexdigest()
    if _stamp(ts_dir) != digest:
        with _install_lock(ts_dir):
            if _stamp(ts_dir) != digest:  # another worker may have installed while this one waited
                _npm_ci(ts_dir, digest, package)
    _ready.add(ts_dir)


def check_node() -> None:
    """Raise ClientUnavailable (the one line naming the packages) unless Node >= 20 and npm are on PATH."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if path is None)
        raise ClientUnavailable(f"{NEEDED} ({missing} not on PATH)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major.group(1)) < MIN_NODE:
        raise ClientUnavailable(f"{NEEDED} (found node {version or 'of unknown version'})")


def _stamp(ts_dir: Path) -> str | None:
    try:
        return (ts_dir / "node_modules" / STAMP).read_text().strip()
    except OSError:
        return None


@contextmanager
def _install_lock(ts_dir: Path) -> Iterator[None]:
    """An exclusive lock per folder, in the folder beside its lockfile (ignored by git), so it goes
    with the checkout: one in the system's temporary folder per checkout path piled up there."""
    with open(ts_dir / LOCK, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _npm_ci(ts_dir: Path, digest: str, package: str = TS_PACKAGE) -> None:
    """``npm ci`` (it removes node_modules first, stale stamp included), then write the stamp."""
    proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=ts_dir, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0 or not (ts_dir / "node_modules" / package / "package.json").is_file():
        tail = " ".join((proc.stderr or proc.stdout).split())[-800:]
        raise ClientUnavailable(f"`npm ci` in {ts_dir} failed (exit {proc.returncode}): {tail}")
    (ts_dir / "node_modules" / STAMP).write_text(digest + "\n")
