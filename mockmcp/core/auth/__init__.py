"""Authorization over HTTP without sockets: the MCP endpoint as an OAuth 2.1 protected resource
(``resource``) and the built-in authorization server (``server``, ``clients``), their issued codes and
tokens (``tokens``), strict form parsing (``forms``), the answers and the one error builder
(``answers``), and the paths that reach them (``site``). Imported only for a scenario with ``auth``."""
