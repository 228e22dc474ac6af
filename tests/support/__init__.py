"""Test helpers: real servers and databases started on loopback."""
