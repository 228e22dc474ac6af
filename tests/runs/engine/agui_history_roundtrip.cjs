// Round-trips a thread's history (GET /agent/threads/{id}/messages?format=ag-ui) through the AG-UI
// reference client (@ag-ui/client 1.0): the history becomes the agent's messages, one more run is made
// on top of it, and every `[ag-ui]` warning is collected. Prints one JSON report on stdout.
const { HttpAgent } = require("@ag-ui/client");

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

async function main() {
  const [base, token, threadId] = process.argv.slice(2);
  const headers = { Authorization: `Bearer ${token}` };
  const page = await fetch(`${base}/agent/threads/${threadId}/messages?format=ag-ui`, { headers });
  const history = (await page.json()).messages;
  const agent = new HttpAgent({ url: `${base}/agent/runs`, threadId, headers, initialMessages: history });
  agent.addMessage({ id: `m-next-${threadId}`, role: "user", content: "and now?" });
  const events = [];
  await agent.runAgent({ runId: `r-next-${threadId}` }, { onEvent: ({ event }) => events.push(event) });
  return { events: events.map((e) => e.type), messages: agent.messages, historyLength: history.length };
}

main().then(
  (report) => console.log(JSON.stringify({ ...report, warnings })),
  (error) => {
    console.log(JSON.stringify({ error: String((error && error.stack) || error), warnings }));
    process.exit(1);
  },
);
