// The AI SDK's own client code against Iris's /api/agents/{slug}/ui-chat: DefaultChatTransport sends (or
// reconnects), every chunk is parsed by the SDK's schema, readUIMessageStream assembles the message. One
// operation per run; it prints one JSON line that the Python test checks.
// Usage: node ui_chat_flow.mjs '{"op": "send"|"reconnect"|"messages", "api", "token", "chatId", ...}'
import { DefaultChatTransport, readUIMessageStream, validateUIMessages } from "ai";

const op = JSON.parse(process.argv[2]);
const transport = new DefaultChatTransport({
  api: op.api,
  headers: { Authorization: `Bearer ${op.token}` },
  body: op.body ?? {},
});

async function assemble(stream, message) {
  const chunks = [];
  const errors = [];
  const recorded = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        chunks.push(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  let last = null;
  for await (const assembled of readUIMessageStream({
    stream: recorded,
    message,
    onError: (error) => errors.push(String(error?.message ?? error)),
  })) {
    last = assembled;
  }
  return { chunks, errors, message: last };
}

async function run() {
  if (op.op === "send") {
    const stream = await transport.sendMessages({
      trigger: op.trigger ?? "submit-message",
      chatId: op.chatId,
      messageId: op.messageId,
      messages: op.messages,
      abortSignal: undefined,
    });
    return assemble(stream, op.continues);
  }
  if (op.op === "reconnect") {
    const stream = await transport.reconnectToStream({ chatId: op.chatId });
    return stream === null ? { none: true } : assemble(stream, undefined);
  }
  const response = await fetch(`${op.api}/${op.chatId}/messages`, {
    headers: { Authorization: `Bearer ${op.token}` },
  });
  const messages = await response.json();
  return { status: response.status, messages: await validateUIMessages({ messages }) };
}

try {
  console.log(JSON.stringify(await run()));
} catch (error) {
  console.log(JSON.stringify({ thrown: error?.constructor?.name ?? "Error", message: String(error?.message ?? error) }));
}
