"""Before the stream: a run's request checked and resolved into its plan (thread, agent, model and its
fallbacks, tools, new input, interrupts answered, knobs, deadlines), or refused with problem+json."""
