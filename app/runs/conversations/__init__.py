"""Keeping conversations: a session's tree of messages and its active line, the sessions list, history
answers, export and import."""
