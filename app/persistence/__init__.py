"""Tables, repositories, the database configuration (SQLite inline on the loop, PostgreSQL) and the
migration head check.

Imports only ``settings``: every other package may use it, it uses none of them.
"""
