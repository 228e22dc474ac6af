"""``python -m iris``: the ``iris`` command (serve, token, models, …)."""

from iris.app.__main__ import main

main()
