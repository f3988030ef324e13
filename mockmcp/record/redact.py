"""Redaction of recorded values: secrets never reach a cassette.

A recording holds what a client sent and what a server answered, and either may
carry credentials (a password argument, a token in a result, an API key in
``_meta``). Before a cassette is built, every value under a key that looks like a
secret is replaced by ``PLACEHOLDER``, and every match of a ``--redact`` regular
expression inside any string is replaced too, and so is every other occurrence of
a value found under a secret key (a token a tool returns in ``structuredContent`` is
also inside its text content; of an ``Authorization``-like value such as ``Bearer abc``,
the credential alone too). Protocol keys that merely contain such a word
(``progressToken``, ``maxTokens``) are kept. Which names are secret and the placeholder are
the vocabulary of ``wire/redaction.py``, which the journal uses too. Sans-I/O.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from mockmcp.wire.redaction import DEFAULT_SECRET_WORDS, PLACEHOLDER, norm, secret_name, split_credential

MIN_LEARNED = 4  # shorter secret values are not searched for elsewhere (too many false hits)


class Redactor:
    """Replaces secret values; ``redacted`` tells whether anything was replaced."""

    def __init__(self, keys: Iterable[str] = (), patterns: Iterable[str] = (), *, defaults: bool = True) -> None:
        self.words = tuple(DEFAULT_SECRET_WORDS if defaults else ()) + tuple(norm(k) for k in keys)
        self.exact = frozenset(norm(k) for k in keys)
        self.patterns = [re.compile(p) for p in patterns]
        self.redacted = 0
        self._learned: set[str] = set()
        self._index: dict[str, list[str]] = {}  # first MIN_LEARNED characters -> learned secrets
        # the index's keys as one regular expression, when few enough: most texts hold none of them,
        # which one search decides at C speed
        self._prefix_search: Any = None
        self._dirty = False
        self._keys: dict[str, bool] = {}  # key -> secret? (a cassette has few distinct keys, many times)

    def learn(self, value: Any) -> None:
        """Remember the values found under secret keys, so that they are replaced wherever else
        they appear (a token returned in a structured result is also inside its text content)."""
        t = type(value)
        if t is dict:
            for k, v in value.items():
                if type(k) is str and self.secret_key(k):
                    self._learn_leaves(v)
                elif type(v) is dict or type(v) is list:
                    self.learn(v)
        elif t is list:
            for v in value:
                tv = type(v)
                if tv is dict or tv is list:
                    self.learn(v)

    def _learn_leaves(self, value: Any) -> None:
        """Everything under a secret key is secret, whatever its type: the strings inside a list or
        an object (``{"api_keys": ["live-..."]}``, ``{"token": {"value": ...}}``) and a number as
        its JSON text (a PIN sent as ``98765432`` is also "your pin is 98765432" in a text)."""
        t = type(value)
        if t is str:
            self._remember(value)
        elif t is int or t is float:
            self._remember(json.dumps(value))
        elif t is dict:
            for v in value.values():  # (its keys are names: "value", "exp")
                self._learn_leaves(v)
        elif t is list:
            for v in value:
                self._learn_leaves(v)

    def _remember(self, value: str) -> None:
        if len(value) >= MIN_LEARNED and value != PLACEHOLDER:
            if value not in self._learned:
                self._learned.add(value)
                self._dirty = True
            # "Bearer abc": the credential alone is the secret wherever else it appears (a token a
            # tool was handed in an Authorization value and echoes in its text)
            parts = split_credential(value)
            if parts is not None and len(parts[1]) >= MIN_LEARNED and parts[1] not in self._learned:
                self._learned.add(parts[1])
                self._dirty = True

    def secret_key(self, key: str) -> bool:
        known = self._keys.get(key)
        if known is None:
            known = self._keys[key] = secret_name(key, self.words, self.exact)
        return known

    def value(self, value: Any) -> Any:
        """``value`` with every secret replaced (a new object where something changed)."""
        t = type(value)
        if t is dict:
            out = {}
            strings = bool(self.patterns or self._learned)
            keys = self._keys
            for k, v in value.items():
                if type(k) is str:
                    if v is not None:
                        secret = keys.get(k)  # secret_key's cache, without a call per key
                        if secret is None:
                            secret = self.secret_key(k)
                        if secret:
                            self.redacted += 1
                            out[k] = PLACEHOLDER
                            continue
                    if strings:  # a secret may be a key too (a session's id), and a --redact match
                        shown = self.text(k)
                        if shown != k:
                            k = self._free_key(shown, out, value)
                tv = type(v)
                if tv is dict or tv is list:
                    out[k] = self.value(v)
                elif tv is str and strings:
                    out[k] = self.text(v)
                else:
                    out[k] = v
            return out
        if t is list:  # a loop, not a call per item: most items are scalars or strings
            strings = bool(self.patterns or self._learned)
            items: list[Any] = []
            append = items.append
            for v in value:
                tv = type(v)
                if tv is dict or tv is list:
                    append(self.value(v))
                elif tv is str and strings:
                    append(self.text(v))
                else:
                    append(v)
            return items
        if t is str and (self.patterns or self._learned):
            return self.text(value)
        return value

    @staticmethod
    def _free_key(shown: str, out: dict[Any, Any], value: dict[Any, Any]) -> str:
        """A redacted key that collides with another key of the object gets a number, so no
        entry is lost: ``[REDACTED]``, ``[REDACTED]-2``..."""
        key, n = shown, 1
        while key in out or key in value:
            n += 1
            key = f"{shown}-{n}"
        return key

    def raw_text(self, text: str) -> str:
        """``text`` holding bytes one character per byte (a ``rawBytes`` step) with its secrets
        replaced. Its bytes are read as UTF-8 first (what JSON text is), so a learned secret with
        non-ASCII characters is found as the server wrote it; bytes that are not UTF-8 are kept
        as they were."""
        if not (self.patterns or self._learned):
            return text
        decoded = text.encode("latin-1").decode("utf-8", "surrogateescape")
        shown = self.text(decoded)
        if shown == decoded:
            return text
        return shown.encode("utf-8", "surrogateescape").decode("latin-1")

    def text(self, text: str) -> str:
        if self._learned and len(text) >= MIN_LEARNED:
            text = self._replace_learned(text)
        for pattern in self.patterns:
            text, n = pattern.subn(PLACEHOLDER, text)
            self.redacted += n
        return text

    def _replace_learned(self, text: str) -> str:
        """Every occurrence of a learned secret in ``text`` replaced, longest first where two start
        at one place. Secrets are indexed by their first characters, so the cost is the text's
        length whatever the number of secrets (a regular expression alternation costs their number
        at every position)."""
        if self._dirty:
            index: dict[str, list[str]] = {}
            for secret in sorted(self._learned, key=len, reverse=True):
                index.setdefault(secret[:MIN_LEARNED], []).append(secret)
            self._index = index
            self._prefix_search = re.compile("|".join(map(re.escape, index))).search if len(index) <= 64 else None
            self._dirty = False
        if text in self._learned:
            self.redacted += 1
            return PLACEHOLDER
        search = self._prefix_search
        if search is not None and search(text) is None:
            return text  # the common case, decided at C speed
        index = self._index
        get = index.get
        parts: list[str] = []
        last = i = 0
        end = len(text) - MIN_LEARNED + 1
        while i < end:
            found = get(text[i : i + MIN_LEARNED])
            if found is not None:
                for secret in found:
                    if text.startswith(secret, i):
                        parts.append(text[last:i])
                        parts.append(PLACEHOLDER)
                        self.redacted += 1
                        i += len(secret)
                        last = i
                        break
                else:
                    i += 1
                continue
            i += 1
        if not parts:
            return text
        parts.append(text[last:])
        return "".join(parts)


__all__ = ["PLACEHOLDER", "DEFAULT_SECRET_WORDS", "Redactor"]
