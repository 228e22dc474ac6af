"""Agent runs: intake before the stream, the orchestrator, the event store, history."""
