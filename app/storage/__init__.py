"""Object storage behind one protocol: local disk (default) or Supabase Storage, signed-URL tokens, and
re-signing of stored image parts.

Imports only ``settings``; it knows objects and URLs, not users or threads.
"""
