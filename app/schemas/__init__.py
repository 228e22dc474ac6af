"""Request and response structs of the JSON API (camelCase on the wire).

Imports ``agui`` (usage and resume shapes) and ``providers``' wire base; nothing with behaviour.
"""
