"""AG-UI 1.0 on the wire: event and input structs, SSE framing, capability declaration."""
