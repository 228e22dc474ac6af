"""A run's events numbered, persisted and fanned out: the event store, live followers and the notices
that wake followers in other processes."""
