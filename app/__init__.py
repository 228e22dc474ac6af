"""Iris: a multimodal agent-chat backend (Litestar service)."""
