"""The Streamable HTTP shell: the same core, served over h11 on trio sockets.

The engine does not know which transport carries a message: each POST body is
handed to the same ``Connection`` (so the same plans, journal, checks and
expectations), with the transport's rules (``core.httprules``) checked on the head
before the body is read and on the decoded message before the engine sees it.
A plan that only sends one message is answered as one JSON body at once, on
the connection's own task; any other plan runs in a task of its own that puts
SSE events on a bounded channel, drained by the connection's task (the one
writer of that socket), while a watcher reads the socket: the client closing it
cancels the plan's scope, and nothing more is written for that request.

One module owns each part, and ``shell.HttpShell`` wires them together:

- ``connections``: accept, read a request within its limits and time, refuse what the rules refuse;
- ``exchange``: one POST, from its body to its answer (a JSON body, a scripted status, a stream);
- ``checks``: what the transport checks of a request's headers and message, and the findings;
- ``transport``: the plan's HTTP steps (``interpret.Transport``), run in the plan's own task;
- ``channel``: the bounded channel between a plan and its writer, and what goes on it;
- ``sse``: the writer that drains that channel onto the socket (SSE events or one JSON body);
- ``responses``: whole answers written at once (JSON, 202, refusals, raw answers without h11);
- ``routing``: the listen streams by subscription id, and delivery onto them;
- ``ids``: the running plans holding each request id (over HTTP two clients may share one);
- ``lifecycle``: the graceful stop, ``exitAfter`` and the pause of reading requests;
- ``taps``: the observers (journal, verifier, control channel) told what happened;
- ``controlled``: the control channel's surface (``shells.control.Controlled``);
- ``seams``: the Protocols between those parts.

The process around the shell (listening, the URL line, stdin's EOF, signals) is
``launch.http``. h11 is imported only by this package, and it only with ``--http``.
"""
