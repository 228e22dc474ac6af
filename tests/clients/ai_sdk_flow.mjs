// The Vercel AI SDK (ai, @ai-sdk/openai, @ai-sdk/openai-compatible) against Iris's /v1: each step prints
// one JSON line that the Python test checks; a step that throws prints its error instead (the run goes on).
// Usage: node ai_sdk_flow.mjs '{"baseURL", "tokens", "image"}' (a token per provider/mode: each spends at
// most four runs of the per-user quota). openai(id), the Responses API, has its own flow: ai_sdk_responses_flow.mjs
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, isStepCount, streamText, tool } from "ai";
import { z } from "zod";

const { baseURL, tokens, image } = JSON.parse(process.argv[2]);
const MODEL = "openai/gpt-4o";
const say = (step, value) => console.log(JSON.stringify({ step, ...value }));

const providers = {
  "openai-chat": (apiKey) => createOpenAI({ baseURL, apiKey }).chat(MODEL),
  compatible: (apiKey) => createOpenAICompatible({ name: "iris", baseURL, apiKey, includeUsage: true })(MODEL),
};
const weather = tool({
  description: "The weather in a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, sky: "sunny" }),
});
const usageOf = (usage) => ({ input: usage?.inputTokens ?? null, output: usage?.outputTokens ?? null });

async function step(name, run) {
  try {
    say(name, await run());
  } catch (error) {
    say(name, { error: error?.constructor?.name ?? String(error), message: String(error?.message ?? error) });
  }
}

async function generate(model, request) {
  const result = await generateText({ model, maxRetries: 0, ...request });
  return {
    text: result.text,
    finish: result.finishReason,
    usage: usageOf(result.usage),
    total: usageOf(result.totalUsage),
    steps: result.steps.length,
    calls: result.steps.flatMap((s) => s.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input }))),
  };
}

async function stream(model, request) {
  let error = null;
  const result = streamText({ model, maxRetries: 0, onError: ({ error: e }) => { error = e; }, ...request });
  let text = "";
  for await (const piece of result.textStream) text += piece;
  if (error) throw error;
  const steps = await result.steps;
  return {
    text,
    finish: await result.finishReason,
    usage: usageOf(await result.usage),
    total: usageOf(await result.totalUsage),
    steps: steps.length,
    calls: steps.flatMap((s) => s.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input }))),
  };
}

const cases = {
  text: { prompt: "Hi" },
  image: {
    messages: [{ role: "user", content: [{ type: "text", text: "What is it?" }, { type: "image", image }] }],
  },
  tools: { prompt: "Weather in Paris?", tools: { get_weather: weather }, stopWhen: isStepCount(2) },
};

for (const [provider, build] of Object.entries(providers)) {
  for (const [mode, call] of Object.entries({ generate, stream })) {
    const model = build(tokens[`${provider}/${mode}`]);
    for (const [name, request] of Object.entries(cases)) {
      await step(`${provider}/${mode}/${name}`, () => call(model, request));
    }
  }
}
