"""Object storage behind one protocol: local disk (default) or Supabase Storage."""
