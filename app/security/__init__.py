"""Who may do what: bearer tokens, ownership checks, the attachment URL policy and quotas.

Imports ``persistence``, ``storage`` (signed-token checks) and the root modules; never ``media``,
``runs`` or ``api``.
"""
