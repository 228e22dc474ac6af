"""Request and response structs of the JSON API (camelCase on the wire)."""
