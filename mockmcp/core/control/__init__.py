"""The live control channel's core: one control line in, one response (and effects) out.

A test drives the running mock over a Unix socket (``mockmcp.shells.control``) with JSON-RPC
2.0 requests, one per line: emit an event now, add/replace/remove a tool, prompt, resource or
template, read and set named state, read rule counters, arm one-shot replies, pause and resume
stdin, read the recent traffic, wait for a request, read and drive tasks, shut down. This
package knows all of it and does no I/O: ``Control.handle_line`` returns an ``Outcome`` (the
response, the MCP lines to write first, and an effect only the shell can perform: pause,
resume, shutdown, or a wait to park). Its parts:

- ``dispatch``: ``Control``, the operations table, the error boundary, the channel's own operations;
- ``scenario_ops``: events, definitions, state, counters, armed replies;
- ``task_ops``: ``listTasks``, ``getTask``, ``setTask``;
- ``auth_ops``: authorization's (tokens, scopes required, parked authorizations, metadata, migration);
- ``journal``: the recent MCP traffic, kept as its JSON text;
- ``waits``: ``waitFor``'s parked waits and near misses;
- ``outcome``: what a line asks of the shell; ``params``: errors and parameter readers;
- ``surface``: the seams (the engine surface and the fragment checks it is handed).

The error model is the MCP side's: every mistake of a control client is a ``ClientError``
raised where it is found and turned into its response by ``errors.error_response`` in
``handle_line``. Definitions and armed replies are checked exactly like a scenario file.
"""

from __future__ import annotations

from mockmcp.core.control.dispatch import Control
from mockmcp.core.control.outcome import Effect, Outcome, Pause, Resume, Shutdown
from mockmcp.core.control.params import NOT_FOUND, TIMED_OUT, NotFound, TimedOut
from mockmcp.core.control.surface import AuthSurface, ControlledEngine, Fragments
from mockmcp.core.control.waits import Waiter, WaitSpec

__all__ = [
    "NOT_FOUND", "TIMED_OUT", "AuthSurface", "Control", "ControlledEngine", "Effect", "Fragments", "NotFound", "Outcome", "Pause",
    "Resume", "Shutdown", "TimedOut", "WaitSpec", "Waiter",
]
