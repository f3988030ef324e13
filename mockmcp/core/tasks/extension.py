"""Whether a request may use the Tasks extension: the client capability it must declare. Sans-I/O."""

from __future__ import annotations

from typing import Any

from mockmcp.wire import errors
from mockmcp.wire import protocol as p

REQUIRED_CAPABILITY: dict[str, Any] = {"extensions": {p.TASKS_EXTENSION: {}}}


def has_extension(meta: dict[str, Any]) -> bool:
    """Did this request declare the Tasks extension in its client capabilities?"""
    caps = meta.get(p.META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        return False
    ext = caps.get("extensions")
    return type(ext) is dict and type(ext.get(p.TASKS_EXTENSION)) is dict


def missing_extension(request_id: Any, what: str) -> errors.MissingClientCapability:
    return errors.MissingClientCapability(
        f"Missing required client capability: {what} needs the {p.TASKS_EXTENSION} extension",
        data={"requiredCapabilities": REQUIRED_CAPABILITY},
        request_id=request_id,
    )
