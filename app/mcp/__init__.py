"""MCP servers as tool sources: their configuration (``config``), one live connection per server
(``connection``: connect, discover, call, restart with backoff), the pool of them a process keeps
(``pool``), and what their results become (``results``)."""
