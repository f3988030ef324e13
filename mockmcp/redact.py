"""Redaction of recorded values: secrets never reach a cassette.

A recording holds what a client sent and what a server answered, and either may
carry credentials (a password argument, a token in a result, an API key in
``_meta``). Before a cassette is built, every value under a key that looks like a
secret is replaced by ``PLACEHOLDER``, and every match of a ``--redact`` regular
expression inside any string is replaced too, and so is every other occurrence of
a value found under a secret key (a token a tool returns in ``structuredContent`` is
also inside its text content). Protocol keys that merely contain
such a word (``progressToken``, ``maxTokens``) are kept. Sans-I/O.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

PLACEHOLDER = "[REDACTED]"
MIN_LEARNED = 4  # shorter secret values are not searched for elsewhere (too many false hits)
# Words that mark a key as secret wherever they appear in it (case and separators ignored).
DEFAULT_SECRET_WORDS = ("authorization", "token", "apikey", "password", "passwd", "secret", "cookie")
# Protocol keys that contain such a word but carry no secret.
_NOT_SECRETS = frozenset({"progresstoken", "maxtokens", "totaltokens", "inputtokens", "outputtokens"})


def _norm(key: str) -> str:
    return key.lower().replace("_", "").replace("-", "")


class Redactor:
    """Replaces secret values; ``redacted`` tells whether anything was replaced."""

    def __init__(self, keys: Iterable[str] = (), patterns: Iterable[str] = (), *, defaults: bool = True) -> None:
        self.words = tuple(DEFAULT_SECRET_WORDS if defaults else ()) + tuple(_norm(k) for k in keys)
        self.exact = frozenset(_norm(k) for k in keys)
        self.patterns = [re.compile(p) for p in patterns]
        self.redacted = 0
        self._learned: set[str] = set()
        self._known: re.Pattern[str] | None = None
        self._dirty = False

    def learn(self, value: Any) -> None:
        """Remember the strings found right under secret keys, so that they are replaced wherever else
        they appear (a token returned in a structured result is also inside its text content)."""
        t = type(value)
        if t is dict:
            for k, v in value.items():
                if type(v) is str and type(k) is str and self.secret_key(k):
                    self._remember(v)
                else:
                    self.learn(v)
        elif t is list:
            for v in value:
                self.learn(v)

    def _remember(self, value: str) -> None:
        if len(value) >= MIN_LEARNED and value != PLACEHOLDER:
            if value not in self._learned:
                self._learned.add(value)
                self._dirty = True

    def secret_key(self, key: str) -> bool:
        n = _norm(key)
        if n in self.exact:
            return True
        if n in _NOT_SECRETS:
            return False
        return any(w in n for w in self.words)

    def value(self, value: Any) -> Any:
        """``value`` with every secret replaced (a new object where something changed)."""
        t = type(value)
        if t is dict:
            out = {}
            for k, v in value.items():
                if type(k) is str and self.secret_key(k) and v is not None:
                    self.redacted += 1
                    out[k] = PLACEHOLDER
                else:
                    out[k] = self.value(v)
            return out
        if t is list:
            return [self.value(v) for v in value]
        if t is str and (self.patterns or self._learned):
            return self.text(value)
        return value

    def text(self, text: str) -> str:
        if self._dirty:  # longest first, so a secret that contains another is replaced whole
            ordered = sorted(self._learned, key=len, reverse=True)
            self._known = re.compile("|".join(re.escape(s) for s in ordered))
            self._dirty = False
        if self._known is not None:
            text, n = self._known.subn(PLACEHOLDER, text)
            self.redacted += n
        for pattern in self.patterns:
            text, n = pattern.subn(PLACEHOLDER, text)
            self.redacted += n
        return text


__all__ = ["PLACEHOLDER", "DEFAULT_SECRET_WORDS", "Redactor"]
