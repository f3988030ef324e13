"""Compiled code of attrs-generated methods, cached on disk for ``mockmcp run``.

attrs writes the source of ``__init__``, ``__eq__``, ``__repr__``... of every
class and compiles it at import time. trio's classes and the scenario model
together make about 140 ``compile()`` calls, some 40 ms of every spawn, and
suites spawn the mock once per test. This module keeps the resulting code
objects (``marshal``, keyed by file name and exact source, per Python and attrs
version) so a later spawn evaluates the same code without compiling it.

The behaviour of the generated methods is unchanged: the same source, compiled
by the same interpreter, evaluated in the same namespaces. If attrs stops
routing its code generation through ``attr._make._compile_and_eval`` nothing is
patched and start-up is merely slower.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Any

MAX_ENTRIES = 5000  # a cache that only grows (classes that change every run) is dropped

_state: dict[str, Any] = {"path": None, "table": None, "dirty": False}


def cache_dir() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "mockmcp")


def install() -> bool:
    """Route attrs' code generation through the cache; call before importing trio or the model."""
    if _state["table"] is not None:
        return True
    from attr import _make

    original = getattr(_make, "_compile_and_eval", None)
    if original is None or getattr(original, "__module__", None) != "attr._make":
        return False  # unknown attrs internals: leave them alone
    # attrs' version by its code file (``attr.__version__`` imports importlib.metadata: 30 ms).
    st = os.stat(_make.__file__)
    version = f"{sys.implementation.cache_tag}-{st.st_size}-{st.st_mtime_ns}"
    path = os.path.join(cache_dir(), f"attrs-code-{version}.marshal")
    try:
        with open(path, "rb") as fh:
            table = marshal.load(fh)
        if type(table) is not dict or len(table) > MAX_ENTRIES:
            table = {}
    except (OSError, EOFError, ValueError, TypeError):
        table = {}
    _state.update(path=path, table=table)

    def compile_and_eval(script: str, globs: Any, locs: Any = None, filename: str = "") -> None:
        key = _stable_key(script, filename)
        code = table.get(key) if key is not None else None
        if code is None:
            code = compile(script, filename, "exec")
            if key is not None:
                table[key] = code
                _state["dirty"] = True
        eval(code, globs, locs)

    _make._compile_and_eval = compile_and_eval
    return True


_METHODS = "<attrs generated methods "


def _stable_key(script: str, filename: str) -> str | None:
    """The cache key, or None for source that differs from run to run.

    A generated ``__hash__`` embeds ``hash()`` of a string, which changes with
    every process (hash randomization). Any constant works there as long as
    one process uses one per class, so the key replaces it by a placeholder
    and a cached code object keeps the constant of the run that compiled it.
    """
    if "def __hash__" not in script:
        return filename + "\0" + script
    if not filename.startswith(_METHODS):
        return None
    type_hash = f" {hash('<attrs generated hash ' + filename[len(_METHODS):])},\n"
    if type_hash not in script:
        return None
    return filename + "\0" + script.replace(type_hash, " <type hash>,\n", 1)


def save() -> None:
    """Write the cache if this process compiled anything new (normally only the first spawn)."""
    path, table = _state["path"], _state["table"]
    if not _state["dirty"] or path is None:
        return
    _state["dirty"] = False
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            marshal.dump(table, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home only costs start-up time
