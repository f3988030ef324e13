"""Scenario files in, ``model.Scenario`` out.

Loading is strict: the YAML 1.2 core schema, no duplicate or non-string keys, no
alias bombs, no coercion between types, and every problem printed as
``FILE:LINE:COL: message (at $.path)`` (see ``plainload``, the only module that
imports yaml or cattrs).

Two paths give the same result. The fast one (``quickload``: a plain YAML subset
read line by line, and structure functions built from the model's annotations)
imports neither yaml nor cattrs and keeps no positions; it declines anything
outside its subset and anything doubtful, and when it or the semantic checks find
any problem, the plain path loads the file again and locates every problem. So
errors and warnings always come from the plain path, and a valid file usually
never pays for it.
"""

from __future__ import annotations

import gc
import os
import stat
from pathlib import Path
from typing import Any

from mockmcp.scenario import cachewrite, loadcache
from mockmcp.scenario.model import base as model
from mockmcp.scenario import quickload
from mockmcp.scenario import scalars
from mockmcp.scenario.loadcache import MAX_FILE_BYTES  # (the bound of a scenario file and of the files it references)
from mockmcp.scenario.loadcache import bundled_dir, bundled_names, resolve  # noqa: F401 (re-exported)
from mockmcp.scenario.filekinds import file_kind
from mockmcp.scenario.problems import LoadError, Problem
from mockmcp.scenario.scalars import MAX_DEPTH, MAX_INT_DIGITS, parse_duration  # noqa: F401 (re-exported)

def load_text(
    text: str, filename: str, *, base_dir: Path | None = None, allow_absolute: bool = False
) -> tuple[model.Scenario, list[Problem]]:
    """Parse, structure and check scenario text; returns (scenario, warnings)."""
    # Loading allocates millions of objects and frees none: with the cyclic GC on, its
    # collections rescan them all again and again (a 100k-rule file took 50 s, not 10).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load_text(text, filename, base_dir=base_dir, allow_absolute=allow_absolute)
    finally:
        if was_enabled:
            gc.enable()


def _load_text(
    text: str, filename: str, *, base_dir: Path | None, allow_absolute: bool
) -> tuple[model.Scenario, list[Problem]]:
    from mockmcp.scenario import check  # semantic checks live beside the model, not here

    data = quickload.parse(text)
    scenario = quickload.structure(data) if type(data) is dict and "mockmcp" in data else None
    if scenario is not None:
        files, file_problems = read_resource_files(scenario, base_dir, allow_absolute)
        checked, found = check.check(scenario, files=files)
        if not found and not file_problems:
            return checked, []
    return _plain_load_text(text, filename, base_dir=base_dir, allow_absolute=allow_absolute)


def _plain_load_text(
    text: str, filename: str, *, base_dir: Path | None, allow_absolute: bool
) -> tuple[model.Scenario, list[Problem]]:
    """PyYAML with marks and the cattrs converter: every problem found and located."""
    from mockmcp.scenario import check
    from mockmcp.scenario import plainload

    data, positions = plainload.parse_yaml(text, filename)
    if type(data) is not dict:
        raise LoadError([Problem(filename, 1, 1, f"a scenario must be a mapping, got {scalars.show(data)}", ())])
    if "mockmcp" not in data:
        raise LoadError([Problem(filename, 1, 1, "missing required key 'mockmcp' (the format version: 1)", ())])
    scenario = plainload.structure(data, positions, filename)
    files, file_problems = read_resource_files(scenario, base_dir, allow_absolute)
    scenario, found = check.check(scenario, files=files)
    problems = found + [check.Found(path, message) for path, message in file_problems]
    errors = [Problem(filename, *plainload.position(positions, pr.path), pr.message, pr.path, pr.level) for pr in problems]
    if any(p.level == "error" for p in errors):
        raise LoadError(errors)
    return scenario, errors


def read_resource_files(
    scenario: model.Scenario, base_dir: Path | None, allow_absolute: bool
) -> tuple[dict[str, bytes], list[tuple[tuple[Any, ...], str]]]:
    """The bytes of every resource ``file:`` (by reference), and the problems of those
    that cannot be read. The loader reads them so that ``check`` stays free of I/O."""
    files: dict[str, bytes] = {}
    problems: list[tuple[tuple[Any, ...], str]] = []
    for i, r in enumerate(scenario.resources):
        if r.file is None or r.file in files:
            continue
        data = _read_file(base_dir, r.file, allow_absolute)
        if isinstance(data, str):
            problems.append((("resources", i, "file"), data))
        else:
            files[r.file] = data
    return files, problems


def _read_file(base_dir: Path | None, ref: str, allow_absolute: bool) -> bytes | str:
    """A referenced file's bytes, or why it may not or cannot be read."""
    if base_dir is None:
        return "file references need a scenario file (inline scenarios cannot reference files)"
    if "\0" in ref:
        return "a file reference cannot contain a NUL character"
    if os.path.isabs(ref):
        if not allow_absolute:
            return "absolute paths are not allowed (run with --allow-absolute-paths to permit them)"
        target = os.path.realpath(ref)
    else:
        folder = os.path.realpath(base_dir)
        target = os.path.realpath(os.path.join(folder, ref))  # symlinks resolved: a link out counts as leaving
        if os.path.commonpath([folder, target]) != folder:
            return f"{ref!r} leaves the scenario's folder"
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused below)
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as exc:  # (ValueError: a name the file system cannot encode)
        return f"cannot read {ref!r}: {getattr(exc, 'strerror', None) or exc}"
    try:
        # Looked at through the descriptor before anything reads it: a folder, a FIFO, a device
        # or a socket is refused here, never read (a FIFO would block, a folder raises).
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"{ref!r} is not a regular file ({file_kind(st.st_mode)})"
        if st.st_size > MAX_FILE_BYTES:
            return f"{ref!r} has {st.st_size} bytes, more than the {MAX_FILE_BYTES} a resource file may have"
        chunks: list[bytes] = []
        size = 0
        while True:  # (bounded even if the file grows while it is read)
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                return f"{ref!r} has more than the {MAX_FILE_BYTES} bytes a resource file may have"
        return b"".join(chunks)
    except OSError as exc:
        return f"cannot read {ref!r}: {exc.strerror or exc}"
    finally:
        os.close(fd)


def load(
    name_or_path: str, *, allow_absolute: bool = False, use_cache: bool = True
) -> tuple[model.Scenario, list[Problem]]:
    """Load a scenario by file path or bundled name; returns (scenario, warnings).

    A successfully loaded scenario is cached as a pickle keyed by the file's
    bytes and mockmcp's code (see ``loadcache``), so the next spawn skips YAML
    and cattrs (most suites spawn the same scenario hundreds of times).
    Scenarios that reference other files are not cached.
    """
    path = resolve(name_or_path)
    filename = str(path)
    try:
        raw = loadcache.read_scenario(path)
    except OSError as exc:
        raise LoadError([Problem(filename, 0, 0, f"cannot read: {exc.strerror or exc}", ())]) from None
    cache_file = loadcache.cache_file(path, raw, allow_absolute)
    if use_cache:
        hit = loadcache.read(cache_file)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError([Problem(filename, 1, 1, f"not UTF-8 (byte {exc.start})", ())]) from None
    result = load_text(text, filename, base_dir=path.resolve().parent, allow_absolute=allow_absolute)
    if use_cache and not any(r.file for r in result[0].resources):
        cachewrite.write(cache_file, result)
    return result
