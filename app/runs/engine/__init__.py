"""One run from ``RUN_STARTED`` to its end: the orchestrator, model turns, the tool loop, the services
runs share, the run manager and the SSE responses that start or follow a run."""
