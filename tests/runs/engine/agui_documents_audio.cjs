// Drives Iris with the AG-UI reference client (@ag-ui/client 1.0) through a run that sends a `document`
// and an `audio` part (url sources: Iris's signed upload URLs) to the model named in argv, then reads the
// thread's history (?format=ag-ui) back as a new agent's messages and makes one more run on top of it.
// Every `[ag-ui]` warning is collected. Prints one JSON report on stdout.
const { HttpAgent } = require("@ag-ui/client");

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

async function main() {
  const [base, token, threadId, modelId, document, audio] = process.argv.slice(2);
  const headers = { Authorization: `Bearer ${token}` };
  const content = [{ type: "text", text: "What are these?" }, JSON.parse(document), JSON.parse(audio)];
  const agent = new HttpAgent({
    url: `${base}/agent/runs`,
    threadId,
    headers,
    initialMessages: [{ id: `m1-${threadId}`, role: "user", content }],
  });
  const live = [];
  await agent.runAgent(
    { runId: `r1-${threadId}`, forwardedProps: { modelId } },
    { onEvent: ({ event }) => live.push(event) },
  );
  const page = await fetch(`${base}/agent/threads/${threadId}/messages?format=ag-ui`, { headers });
  const history = (await page.json()).messages;
  const again = new HttpAgent({ url: `${base}/agent/runs`, threadId, headers, initialMessages: history });
  again.addMessage({ id: `m2-${threadId}`, role: "user", content: "and now?" });
  const next = [];
  await again.runAgent(
    { runId: `r2-${threadId}`, forwardedProps: { modelId } },
    { onEvent: ({ event }) => next.push(event) },
  );
  return { live: live.map((e) => e.type), liveMessages: agent.messages, history, next: next.map((e) => e.type) };
}

main().then(
  (report) => console.log(JSON.stringify({ ...report, warnings })),
  (error) => {
    console.log(JSON.stringify({ error: String((error && error.stack) || error), warnings }));
    process.exit(1);
  },
);
