"""The hand-off's wire format, as the warm server reads it, and the server's answers.

A hand-off is ``MMW1``, a 4-byte big-endian length and that many bytes of JSON (the launcher
writes it: ``mockmcp.warm.launcher.handoff_body``), with the launcher's fds 0, 1 and 2 riding
as SCM_RIGHTS on its first bytes. ``parse`` is pure and strict: any field missing, of the wrong
type or out of bounds, an unknown field, a length past ``MAX_BODY`` or a wrong magic is a
``BadHandoff`` (the server closes the connection; nothing is forked), never an exception of
another kind. Every answer is one JSON line: ``{"child": PID}`` once forked (the launcher lets
go of its pipes), ``{"refused": WHY}`` (the launcher runs directly), ``{"status": WAITSTATUS}``
when the child is reaped. The launcher sends ``{"signal": N}`` lines to have one forwarded.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from mockmcp.warm.launcher import HEADER_FORMAT, MAGIC, MAX_BODY

HEADER = struct.Struct(HEADER_FORMAT)
MAX_SIGNAL_LINE = 64
_FIELDS = {"argv", "cwd", "env", "umask", "limits", "pid", "ignored", "blocked", "encodings"}
_MAX_SIGNAL = 128


class BadHandoff(Exception):
    """A hand-off that cannot be honoured as sent: garbage, truncated or out of bounds."""


@dataclass(frozen=True)
class Handoff:
    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    umask: int
    limits: dict[str, tuple[int, int]]
    pid: int
    ignored: frozenset[int]
    blocked: frozenset[int]
    encodings: dict[str, str]


def body_length(head: bytes) -> int:
    """The body's length from the first ``HEADER.size`` bytes."""
    magic, length = HEADER.unpack(head)
    if magic != MAGIC:
        raise BadHandoff("not a mockmcp hand-off")
    if length > MAX_BODY:
        raise BadHandoff(f"a hand-off of {length} bytes (at most {MAX_BODY})")
    return int(length)


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadHandoff(f"{what}: a list of strings expected")
    return tuple(value)


def _string_map(value: object, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadHandoff(f"{what}: an object of strings expected")
    return dict(value)


def _int(value: object, what: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise BadHandoff(f"{what}: an integer in [{low}, {high}] expected")
    return value


def _signals(value: object, what: str) -> frozenset[int]:
    if not isinstance(value, list):
        raise BadHandoff(f"{what}: a list of signal numbers expected")
    return frozenset(_int(v, what, 1, _MAX_SIGNAL) for v in value)


def _limits(value: object) -> dict[str, tuple[int, int]]:
    if not isinstance(value, dict):
        raise BadHandoff("limits: an object expected")
    limits = {}
    for name, pair in value.items():
        if not name.startswith("RLIMIT_") or not isinstance(pair, list) or len(pair) != 2:
            raise BadHandoff(f"limits.{name}: [soft, hard] expected")
        limits[name] = (_int(pair[0], name, -1, 2**63), _int(pair[1], name, -1, 2**63))
    return limits


def parse(body: bytes) -> Handoff:
    """The hand-off in ``body`` (the JSON after the header), checked field by field."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadHandoff(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadHandoff("not a JSON object")
    if set(value) != _FIELDS:
        raise BadHandoff(f"fields {sorted(value)} (expected {sorted(_FIELDS)})")
    argv = _strings(value["argv"], "argv")
    cwd = value["cwd"]
    if not isinstance(cwd, str) or not cwd.startswith("/") or "\0" in cwd:
        raise BadHandoff("cwd: an absolute path expected")
    env = _string_map(value["env"], "env")
    if any("\0" in k or "=" in k or not k or "\0" in v for k, v in env.items()) or any("\0" in a for a in argv):
        raise BadHandoff("env/argv: NUL characters or empty names")
    return Handoff(
        argv=argv, cwd=cwd, env=env,
        umask=_int(value["umask"], "umask", 0, 0o777),
        limits=_limits(value["limits"]),
        pid=_int(value["pid"], "pid", 1, 2**31),
        ignored=_signals(value["ignored"], "ignored"),
        blocked=_signals(value["blocked"], "blocked"),
        encodings=_string_map(value["encodings"], "encodings"),
    )


def parse_signal(line: bytes) -> int | None:
    """The signal number of a ``{"signal": N}`` line from the launcher, None for anything else."""
    if len(line) > MAX_SIGNAL_LINE:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or set(value) != {"signal"}:
        return None
    sig = value["signal"]
    return sig if type(sig) is int and 1 <= sig <= _MAX_SIGNAL else None


def answer(key: str, value: int | str) -> bytes:
    """One answer line: ``child``, ``refused`` or ``status``."""
    return json.dumps({key: value}).encode() + b"\n"
