"""Writing the load cache (``loadcache`` reads it): an entry on a miss, and the folder's bounds.

Only a miss, which has just loaded the file from YAML, gets here, so a warm spawn never
imports ``pickle``'s pure-Python module for it. An entry is ``loadcache.MAGIC``, the SHA-256
of its pickle, then the pickle.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
from pathlib import Path
from typing import Any

from mockmcp.scenario.loadcache import MAGIC

MAX_ENTRIES = 1000  # files in the cache folder before ``prune`` removes the oldest
MAX_BYTES = 256 * 1024 * 1024  # and bytes (a 100,000-rule scenario's entry is a few MB)


class Pickler(pickle.Pickler):
    """Pickles attrs instances as ``cls(*values)``.

    attrs' own pickling of slotted frozen classes stores a dict per object and
    restores it with a Python-level ``__setstate__`` loop; calling the
    generated ``__init__`` with positional values loads about twice as fast,
    which matters for scenarios with 100,000 rules. Trailing fields that hold
    their default (the very object: ``None``, ``False``...) are left out, as
    ``__init__`` sets them alike: most rules leave their sequence, cycle and
    name unset, and the entry is smaller and loads faster without them. Classes
    whose ``__init__`` does not take every field positionally keep the default.
    """

    _positional: dict[type, bool] = {}

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        fields = getattr(cls, "__attrs_attrs__", None)
        if fields is None:
            return NotImplemented
        ok = self._positional.get(cls)
        if ok is None:
            ok = self._positional[cls] = not hasattr(cls, "__attrs_post_init__") and all(
                f.init and not f.kw_only and f.converter is None and f.alias == f.name for f in fields
            )
        if not ok:
            return NotImplemented
        values = [getattr(obj, f.name) for f in fields]
        n = len(values)
        while n and values[n - 1] is fields[n - 1].default:  # (a Factory default is never the value)
            n -= 1
        return cls, tuple(values[:n])


def write(file: Path, result: Any) -> None:
    """Store a loaded scenario, then keep the folder within its bounds (``prune``)."""
    buffer = io.BytesIO()
    Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(result)
    payload = buffer.getvalue()
    try:
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = file.with_suffix(f".{os.getpid()}.tmp")
        # 0600 whatever the umask: the reader unpickles only an entry no one else may write
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600), "wb") as fh:
            os.fchmod(fh.fileno(), 0o600)  # (a file left by an earlier run keeps its mode through O_CREAT)
            fh.write(MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, file)
    except OSError:
        return  # a read-only home is fine: we just load from YAML next time
    prune(file.parent)


def prune(folder: Path, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
    """Past ``max_entries`` files or ``max_bytes``, remove the oldest written until a quarter
    of each bound is free again.

    A key names the scenario file's folder, so a suite that writes its scenarios under new
    temporary folders adds entries on every run: without a bound the folder grows for ever.
    Only a miss gets here, and it has just loaded a file from YAML; pruning a quarter at a
    time keeps the next misses from listing the folder for nothing. Another process may
    remove the same entries: what is already gone is skipped, and a reader that has an
    entry open reads it whole."""
    entries: list[tuple[int, int, str]] = []
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries.append((st.st_mtime_ns, st.st_size, entry.path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    if len(entries) <= max_entries and total <= max_bytes:
        return
    entries.sort()
    count = len(entries)
    for _, size, path in entries:
        if count <= max_entries * 3 // 4 and total <= max_bytes * 3 // 4:
            break
        try:
            os.unlink(path)
        except OSError:
            pass
        count -= 1
        total -= size
