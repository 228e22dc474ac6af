// Drives Iris with the AG-UI reference client (@ag-ui/client 1.0): a run that stops for approval,
// then a resume built with the client's own buildResumeArray, then a run that reasons
// (forwardedProps.enableThinking). Prints one JSON report on stdout.
const { HttpAgent, buildResumeArray } = require("@ag-ui/client");

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

async function main() {
  const [url, token, threadId, imagePartJson, uploadId] = process.argv.slice(2);
  const agent = new HttpAgent({
    url,
    threadId,
    headers: { Authorization: `Bearer ${token}` },
    initialMessages: [
      {
        id: `m1-${threadId}`,
        role: "user",
        content: [
          { type: "text", text: `use tool delete_attachment {"uploadId": "${uploadId}"}` },
          JSON.parse(imagePartJson),
        ],
      },
    ],
  });
  const first = [];
  await agent.runAgent({ runId: `r1-${threadId}` }, { onEvent: ({ event }) => first.push(event) });
  const interrupts = agent.pendingInterrupts;
  const resume = buildResumeArray(
    interrupts,
    Object.fromEntries(interrupts.map((i) => [i.id, { status: "resolved" }])),
  );
  const second = [];
  await agent.runAgent({ runId: `r2-${threadId}`, resume }, { onEvent: ({ event }) => second.push(event) });
  agent.addMessage({ id: `m3-${threadId}`, role: "user", content: "Think first, then answer." });
  const third = [];
  await agent.runAgent(
    { runId: `r3-${threadId}`, forwardedProps: { enableThinking: true, reasoningEffort: "low" } },
    { onEvent: ({ event }) => third.push(event) },
  );
  return {
    first: first.map((e) => e.type),
    firstOutcome: first[first.length - 1].outcome,
    interrupts,
    second: second.map((e) => e.type),
    pendingAfter: agent.pendingInterrupts,
    third: third.map((e) => e.type),
    messages: agent.messages,
  };
}

main().then(
  (report) => console.log(JSON.stringify({ ...report, warnings })),
  (error) => {
    console.log(JSON.stringify({ error: String((error && error.stack) || error), warnings }));
    process.exit(1);
  },
);
