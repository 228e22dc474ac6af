// The OpenAI Node SDK's client.responses against Iris's /v1/responses: each step prints one JSON line
// that the Python test checks (every event and Response is also checked there, by the Python SDK's types).
// Usage: node openai_node_responses_flow.mjs <base url of /v1> <token> <data url of an image>
import OpenAI from "openai";

const [baseURL, apiKey, image] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30000 });
const say = (step, value) => console.log(JSON.stringify({ step, ...value }));

// 1. streamed text: the events in order, the final response
const events = [];
const stream = await client.responses.create({ model: "openai/gpt-4o", input: "Hi", stream: true });
for await (const event of stream) events.push(event);
const completed = events.at(-1).response;
say("stream", { types: events.map((e) => e.type), sequence: events.map((e) => e.sequence_number), text: completed.output_text ?? completed.output[0].content[0].text, total: completed.usage.total_tokens, final: completed });

// 2. not streamed, an image as a data URL; the SDK's output_text helper
const plain = await client.responses.create({
  model: "openai/gpt-4o",
  input: [{ role: "user", content: [{ type: "input_text", text: "What is it?" }, { type: "input_image", image_url: image, detail: "auto" }] }],
});
say("image", { text: plain.output_text, model: plain.model, id: plain.id });

// 3. a function call, answered as function_call_output after previous_response_id
const tools = [{ type: "function", name: "get_weather", strict: false, parameters: { type: "object", properties: { city: { type: "string" } } } }];
const called = await client.responses.create({ model: "openai/gpt-4o", input: "Weather in Paris?", tools });
const call = called.output.find((item) => item.type === "function_call");
const answered = await client.responses.create({
  model: "openai/gpt-4o",
  tools,
  previous_response_id: called.id,
  input: [{ type: "function_call_output", call_id: call.call_id, output: '{"sky":"sunny"}' }],
});
say("tools", { name: call.name, args: call.arguments, text: answered.output_text, previous: answered.previous_response_id === called.id });

// 4. the stored response read back and forgotten
const got = await client.responses.retrieve(answered.id);
const items = await client.responses.inputItems.list(answered.id);
await client.responses.delete(answered.id);
let gone = null;
try {
  await client.responses.retrieve(answered.id);
} catch (error) {
  gone = error.constructor.name;
}
say("stored", { text: got.output_text, items: items.data.map((i) => i.type), gone });

// 5. an error as the SDK's own class
try {
  await client.responses.create({ model: "openai/gpt-4o", input: "Hi", tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }] });
  say("bad_request", { error: null });
} catch (error) {
  say("bad_request", { error: error.constructor.name, status: error.status, code: error.code ?? null, param: error.param ?? null });
}
