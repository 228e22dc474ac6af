// Drives Iris with the AG-UI reference client (@ag-ui/client 1.0) through an MCP tool that asks the user
// a question mid-call: a run that ends with an `input_required` interrupt, then a resume built with the
// client's own buildResumeArray carrying the form's answer. Every warning is collected. Prints one JSON
// report on stdout.
const { HttpAgent, buildResumeArray } = require("@ag-ui/client");

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

async function main() {
  const [url, token, threadId, text, answerJson] = process.argv.slice(2);
  const agent = new HttpAgent({
    url,
    threadId,
    headers: { Authorization: `Bearer ${token}` },
    initialMessages: [{ id: `m1-${threadId}`, role: "user", content: text }],
  });
  const first = [];
  await agent.runAgent({ runId: `r1-${threadId}` }, { onEvent: ({ event }) => first.push(event) });
  const interrupts = agent.pendingInterrupts;
  const resume = buildResumeArray(
    interrupts,
    Object.fromEntries(interrupts.map((i) => [i.id, { status: "resolved", payload: JSON.parse(answerJson) }])),
  );
  const second = [];
  await agent.runAgent({ runId: `r2-${threadId}`, resume }, { onEvent: ({ event }) => second.push(event) });
  const result = second.find((e) => e.type === "TOOL_CALL_RESULT");
  return {
    firstOutcome: first[first.length - 1].outcome,
    interrupts,
    second: second.map((e) => e.type),
    result: result ? result.content : null,
    pendingAfter: agent.pendingInterrupts,
  };
}

main().then(
  (report) => console.log(JSON.stringify({ ...report, warnings })),
  (error) => {
    console.log(JSON.stringify({ error: String((error && error.stack) || error), warnings }));
    process.exit(1);
  },
);
