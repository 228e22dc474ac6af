"""What speaks HTTP: the controllers, the OpenAPI document, dependencies, problem+json, the JSON depth
guard, the event-loop monitor and the chat page's static files.

The top layer: it may import every other package; nothing in ``app`` imports it but ``asgi``.
"""
