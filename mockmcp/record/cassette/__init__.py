"""Cassettes: what a real server was seen doing, turned into an ordinary scenario.

``Recorder`` is fed every line that passed between a client and a real server
(``client_line`` / ``server_line``, with the shell's clock) and pairs them up:
each client request with the server's progress, log messages, server-to-client
requests (the legacy era's elicitation and sampling), garbage lines and final
answer. ``build`` then writes the scenario as plain data (dicts and lists in the
scenario format's key order): the server's identity, versions, capabilities and
instructions from ``server/discover`` or ``initialize``; the tools, prompts,
resources and templates as listed; and one rule per distinct request, matching
its exact arguments (or params) and answering with the observed steps in order.
``merge`` adds a new recording to an existing cassette without changing what was
there (``new_episodes``). ``yamlemit.dump`` writes the result; the shell owns the
file. Sans-I/O: the clock and the bytes are handed in.

The modules: ``recorder`` (the pairing, bounded), ``builder`` (the scenario's
head and the placing of rules), ``rules`` (one exchange's rules and steps),
``shapes`` (what a step takes, the value rewrites), ``merging`` (new episodes).
The names below are the cassette's as its callers use them.

Redaction happens here, on the observed values, before anything is built: a
``Redactor`` replaces secrets in arguments, results and ``_meta``; a redacted
argument is matched by ``{$present: true}`` so replay still answers it.
"""

from __future__ import annotations

from mockmcp.record.cassette.builder import Options, build, without_surrogates
from mockmcp.record.cassette.merging import merge, recorded_keys, request_key
from mockmcp.record.cassette.recorder import MAX_EVENT_BYTES, MAX_EVENTS, MAX_RAW, NOT_RECORDED, Exchange, Recorder
from mockmcp.record.redact import PLACEHOLDER

__all__ = ["Exchange", "MAX_EVENTS", "MAX_EVENT_BYTES", "MAX_RAW", "NOT_RECORDED", "Options", "PLACEHOLDER", "Recorder",
           "build", "merge", "recorded_keys", "request_key", "without_surrogates"]
