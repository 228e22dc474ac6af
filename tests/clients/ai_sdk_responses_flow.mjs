// The Vercel AI SDK's default openai(id) model (the Responses API) against Iris's /v1/responses: each step
// prints one JSON line that the Python test checks; a step that throws prints its error instead.
// Usage: node ai_sdk_responses_flow.mjs '{"baseURL", "tokens", "image"}' (a token per mode)
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, isStepCount, streamText, tool } from "ai";
import { z } from "zod";

const { baseURL, tokens, image } = JSON.parse(process.argv[2]);
const say = (step, value) => console.log(JSON.stringify({ step, ...value }));
const weather = tool({
  description: "The weather in a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, sky: "sunny" }),
});
const usageOf = (usage) => ({ input: usage?.inputTokens ?? null, output: usage?.outputTokens ?? null });
const callsOf = (steps) => steps.flatMap((s) => s.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })));

async function step(name, run) {
  try {
    say(name, await run());
  } catch (error) {
    say(name, { error: error?.constructor?.name ?? String(error), message: String(error?.message ?? error) });
  }
}

async function generate(model, request) {
  const result = await generateText({ model, maxRetries: 0, ...request });
  return { text: result.text, finish: result.finishReason, usage: usageOf(result.usage), steps: result.steps.length, calls: callsOf(result.steps) };
}

async function stream(model, request) {
  let error = null;
  const result = streamText({ model, maxRetries: 0, onError: ({ error: e }) => { error = e; }, ...request });
  let text = "";
  for await (const piece of result.textStream) text += piece;
  if (error) throw error;
  const steps = await result.steps;
  return { text, finish: await result.finishReason, usage: usageOf(await result.usage), steps: steps.length, calls: callsOf(steps) };
}

const cases = {
  text: { prompt: "Hi", system: "Be brief." },
  image: { messages: [{ role: "user", content: [{ type: "text", text: "What is it?" }, { type: "image", image }] }] },
  tools: { prompt: "Weather in Paris?", tools: { get_weather: weather }, stopWhen: isStepCount(2) },
};

for (const [mode, call] of Object.entries({ generate, stream })) {
  const model = createOpenAI({ baseURL, apiKey: tokens[mode] })("openai/gpt-4o");
  for (const [name, request] of Object.entries(cases)) {
    await step(`${mode}/${name}`, () => call(model, request));
  }
}
