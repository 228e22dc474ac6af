"""The core image pipeline every provider shares: capability check, normalisation, cache, delivery."""
