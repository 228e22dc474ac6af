"""Models and agents: the seeded defaults, option checks, the models file, ``models check``, and the
views the API and runs read (model specs, effective capabilities, availability).

Imports ``schemas``, ``persistence``, the root modules and ``providers``; never ``runs`` or ``api``.
"""
