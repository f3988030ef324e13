"""One-shot overrides armed at run time: a reply for the next N requests that match.

A test arms one over the control channel ("fail the next ``tools/call greet``");
the engine asks ``take`` before the scenario's ``methods:`` overrides and the
built-in handlers, so an armed reply always wins. Each override is a plain
``model.Rule`` (its ``when`` and targeting are counted by the same ``Selector``
as the scenario's rules), plus the method, tool/prompt name and resource uri
it is for, and how many answers it has left. The list lives in the session;
only ``take`` and the control core change it. Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from mockmcp.scenario.model import base as model
from mockmcp.core.context import RequestContext
from mockmcp.core.selection import Chosen, Selector


class Armed:
    """One armed override (mutable: ``remaining`` counts down, ``hits`` up)."""

    __slots__ = ("id", "method", "name", "uri", "rule", "remaining", "hits")

    def __init__(self, id: int, method: str, name: str | None, uri: str | None, rule: model.Rule, times: int) -> None:
        self.id = id
        self.method = method
        self.name = name
        self.uri = uri
        self.rule = rule
        self.remaining = times
        self.hits = 0

    def wants(self, ctx: RequestContext) -> bool:
        """Is ``ctx`` a request this override is for (before its ``when`` is asked)?"""
        if ctx.method != self.method:
            return False
        if self.name is not None and ctx.params.get("name") != self.name:
            return False
        return self.uri is None or ctx.params.get("uri") == self.uri

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "method": self.method, "remaining": self.remaining, "hits": self.hits}
        if self.name is not None:
            out["name"] = self.name
        if self.uri is not None:
            out["uri"] = self.uri
        return out


def take(armed: list[Armed], ctx: RequestContext, selector: Selector) -> Chosen | None:
    """The first armed override that answers ``ctx`` (used up after its last answer), or ``None``."""
    for entry in armed:
        if not entry.wants(ctx):
            continue
        chosen = selector.select([entry.rule], ctx)
        if chosen is None:
            continue
        entry.remaining -= 1
        entry.hits += 1
        if entry.remaining <= 0:
            armed.remove(entry)
        return chosen
    return None
