"""The model classes of a scenario's optional pieces: icons, method overrides, cache
hints, ``exitAfter`` and expectations.

A part of the model (see ``base``'s docstring): imported only where one of these
classes is needed, since creating an attrs class is not free (see ``base``) and a warm
spawn creates the model first.
"""

from __future__ import annotations

from typing import Literal

import attrs
from attrs import frozen

from mockmcp.scenario.model.base import JSON, Model, Rule

__all__ = ["Icon", "MethodOverride", "CacheHints", "ExitAfter", "Expectation"]


@frozen(repr=False, eq=False)
class Icon(Model):
    src: str
    mimeType: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


@frozen(repr=False, eq=False)
class MethodOverride(Model):
    """Rules for any method, consulted before the built-in behaviour.

    This is how a scenario scripts ``server/discover`` faults, answers an
    unknown method, or breaks a list result on purpose.
    """

    method: str
    replies: list[Rule] = attrs.Factory(list)


@frozen(repr=False, eq=False)
class CacheHints(Model):
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None


@frozen(repr=False, eq=False)
class ExitAfter(Model):
    """Exit once ``messages`` lines have been written to stdout (counted per process)."""

    messages: int
    status: int = 1


@frozen(repr=False, eq=False)
class Expectation(Model):
    """What the client must do (checked at exit; see docs/verification.md).

    Which requests count: ``method``, and optionally the tool/prompt ``name``,
    the resource ``uri``, ``arguments`` and ``params`` matchers (as in
    ``when``). How often: ``atLeast``/``atMost`` (combinable), ``exactly`` or
    ``never``; with none of them, at least once. Order: ``before``/``after``
    name another expectation's ``id``. Retries after ``input_required`` count
    only with ``retries: true`` (a multi-round call is one call by default).
    ``headers`` matches the HTTP request's headers (``mockmcp run --http``;
    names compared regardless of case, values with the same matchers).
    """

    method: str
    name: str | None = None
    uri: str | None = None
    arguments: dict[str, JSON] | None = None
    params: dict[str, JSON] | None = None
    atLeast: int | None = None
    atMost: int | None = None
    exactly: int | None = None
    never: bool = False
    before: str | None = None  # the `id` of another expectation whose first request must come later
    after: str | None = None  # the `id` of another expectation whose first request must come earlier
    retries: bool = False
    id: str | None = None
    headers: dict[str, JSON] | None = None  # HTTP request headers (names in any case); none on stdio

