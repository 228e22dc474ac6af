"""What a run's messages are made of: parts, attachments, the model's view of a thread, reasoning, tool
results, structured outputs and usage. Imports no other room of ``iris.app.runs``."""
