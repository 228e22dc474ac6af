"""AG-UI 1.0 on the wire: event and input structs, SSE framing, capability declaration.

Imports only the root modules and ``providers``: it knows the protocol, not the database or the runs.
"""
