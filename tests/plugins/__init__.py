"""Plugin modules the registry tests point entry points at (good, broken and lying ones)."""
