"""The warm fork server: a process with everything imported forks a mock per spawn (``mockmcp warm``).

``launcher`` is what a client spawns (standalone, started with ``python -S``); ``handoff`` the
wire format it speaks; ``paths`` the runtime folder; ``refusals`` when a hand-off must run
directly instead; ``server`` the accept loop; ``child`` what a fork does to be a fresh process;
``control`` starting, finding and stopping the server. docs/warm.md says what is guaranteed.
"""
