// Drives Iris with the AG-UI reference client (@ag-ui/client 1.0) through an MCP tool call whose result
// is an image: the live run (the stored image, with a fresh URL, in TOOL_CALL_RESULT's metadata), then the
// thread's history (?format=ag-ui) as a new agent's messages and one more run on top of it. Every
// `[ag-ui]` warning is collected. Prints one JSON report on stdout.
const { HttpAgent } = require("@ag-ui/client");

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

async function main() {
  const [base, token, threadId, text, outputKey] = process.argv.slice(2);
  const headers = { Authorization: `Bearer ${token}` };
  const agent = new HttpAgent({
    url: `${base}/agent/runs`,
    threadId,
    headers,
    initialMessages: [{ id: `m1-${threadId}`, role: "user", content: text }],
  });
  const live = [];
  await agent.runAgent({ runId: `r1-${threadId}` }, { onEvent: ({ event }) => live.push(event) });
  const result = live.find((e) => e.type === "TOOL_CALL_RESULT");
  const output = result ? result.metadata[outputKey] : null;
  const page = await fetch(`${base}/agent/threads/${threadId}/messages?format=ag-ui`, { headers });
  const history = (await page.json()).messages;
  const again = new HttpAgent({ url: `${base}/agent/runs`, threadId, headers, initialMessages: history });
  again.addMessage({ id: `m2-${threadId}`, role: "user", content: "and now?" });
  const next = [];
  await again.runAgent({ runId: `r2-${threadId}` }, { onEvent: ({ event }) => next.push(event) });
  return {
    live: live.map((e) => e.type),
    toolOutput: output,
    liveMessages: agent.messages,
    history,
    next: next.map((e) => e.type),
  };
}

main().then(
  (report) => console.log(JSON.stringify({ ...report, warnings })),
  (error) => {
    console.log(JSON.stringify({ error: String((error && error.stack) || error), warnings }));
    process.exit(1);
  },
);
