// The OpenAI Node SDK against Iris's /v1: each step prints one JSON line that the Python test checks.
// Usage: node openai_node_flow.mjs <base url of /v1> <token> <data url of an image> <a second token>
// (the second user's quota pays for the runTools steps)
import OpenAI from "openai";

const [baseURL, apiKey, image, toolsKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });
const say = (step, value) => console.log(JSON.stringify({ step, ...value }));

async function failure(step, call) {
  try {
    await call();
    say(step, { error: null });
  } catch (error) {
    say(step, { error: error.constructor.name, status: error.status, code: error.code ?? null });
  }
}

// 1. streamed text with include_usage
let text = "";
let usage = null;
const stream = await client.chat.completions.create({
  model: "openai/gpt-4o",
  messages: [{ role: "user", content: "Hi" }],
  stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  text += chunk.choices[0]?.delta?.content ?? "";
  if (chunk.usage) usage = chunk.usage;
}
say("stream", { text, total: usage?.total_tokens ?? null });

// 2. not streamed, an image as a data URL
const plain = await client.chat.completions.create({
  model: "openai/gpt-4o",
  messages: [{ role: "user", content: [{ type: "text", text: "What is it?" }, { type: "image_url", image_url: { url: image } }] }],
});
say("image", { text: plain.choices[0].message.content, model: plain.model });

// 3. a tool call, then the client's answer
const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
const question = { role: "user", content: "Weather in Paris?" };
const called = await client.chat.completions.create({ model: "openai/gpt-4o", messages: [question], tools });
const call = called.choices[0].message.tool_calls[0];
const answered = await client.chat.completions.create({
  model: "openai/gpt-4o",
  tools,
  messages: [question, called.choices[0].message, { role: "tool", tool_call_id: call.id, content: '{"sky":"sunny"}' }],
});
say("tools", { finish: called.choices[0].finish_reason, name: call.function.name, args: call.function.arguments, text: answered.choices[0].message.content });

// 4. reasoning
let thought = "";
const reasoning = await client.chat.completions.create({ model: "openai/deepseek-reasoner", messages: [{ role: "user", content: "6*7?" }], reasoning_effort: "low", stream: true });
for await (const chunk of reasoning) thought += chunk.choices[0]?.delta?.reasoning_content ?? "";
say("reasoning", { thought });

// 5. runTools, not streamed then streamed: the SDK calls the tool and sends its result back itself
const toolsClient = new OpenAI({ baseURL, apiKey: toolsKey, maxRetries: 0, timeout: 30000 });
for (const stream of [false, true]) {
  const ran = [];
  const runnable = [{
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      parse: JSON.parse,
      function: async ({ city }) => { ran.push(city); return { city, sky: "sunny" }; },
    },
  }];
  const step = stream ? "run_tools_streamed" : "run_tools";
  try {
    const runner = toolsClient.chat.completions.runTools({ model: "openai/gpt-4o", messages: [question], tools: runnable, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
    if (stream) for await (const _ of runner);
    const usage = await runner.totalUsage();
    say(step, { ran, text: await runner.finalContent(), messages: runner.messages.length, total: usage.total_tokens });
  } catch (error) {
    say(step, { error: error.constructor.name, message: String(error.message) });
  }
}

// 6. errors, each as the SDK's own class
await failure("not_found", () => client.chat.completions.create({ model: "nobody/nothing", messages: [{ role: "user", content: "x" }] }));
await failure("bad_request", () => client.chat.completions.create({ model: "openai/gpt-4o", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] }] }));
await failure("unknown_url", () => client.embeddings.create({ model: "openai/gpt-4o", input: "Hi" }));
await failure("auth", () => new OpenAI({ baseURL, apiKey: "nope", maxRetries: 0 }).models.list());
// Until the user's runs this minute are spent (unscripted vendor answers fail as 5xx on the way).
await failure("rate_limit", async () => {
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      await client.chat.completions.create({ model: "openai/gpt-4o", messages: [{ role: "user", content: "x" }] });
    } catch (error) {
      if (!(error instanceof OpenAI.InternalServerError)) throw error;
    }
  }
});
