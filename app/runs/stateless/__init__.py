"""The stateless path: ``POST /api/llm/chat`` and the OpenAI gateway's runs, the engine with the
client's history and nothing stored."""
