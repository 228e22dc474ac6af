"""Per-user authorization at OAuth-protected remote MCP servers (ADR 0086).

A server configured with ``oauth`` is connected once per user (:mod:`iris.app.mcp.oauth.connection`), its
requests carrying that user's bearer token; a user who has not signed in yet, or whose refresh token no
longer works, meets an ``authorization_required`` interrupt carrying the authorization URL
(:mod:`iris.app.mcp.oauth.signin`). Tokens are kept sealed in ``mcp_grants``
(:mod:`iris.app.mcp.oauth.keys`, :mod:`iris.app.mcp.oauth.store`); users list and revoke their
connections (:mod:`iris.app.mcp.oauth.grants`). With ``grant: client_credentials`` the server is connected
once for everyone, with the admin's client.

Only :mod:`iris.app.mcp.oauth.connection` and :mod:`iris.app.mcp.oauth.store` import the MCP SDK; they are
imported with the first connection (:mod:`iris.app.mcp.pool`).
"""
