// The AG-UI reference client (@ag-ui/client 1.0) runs a tool that reports progress, and a second agent
// re-attaches to the same run while it goes (GET /agent/runs/{runId}/events?snapshot=messages) through
// the client's own connectAgent(): it gets the conversation as a MESSAGES_SNAPSHOT, then the run's events.
// Every `[ag-ui]` warning is collected. Prints one JSON report on stdout.
const { HttpAgent, runHttpRequest, transformHttpEventStream } = require("@ag-ui/client");

const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

class ReattachingAgent extends HttpAgent {
  connect(input) {
    const url = `${this.url}/agent/runs/${input.runId}/events?snapshot=messages`;
    const request = () => this.fetch(url, { headers: { ...this.headers, Accept: "text/event-stream" } });
    return transformHttpEventStream(runHttpRequest(request), this.debugLogger);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const [base, token, threadId, text] = process.argv.slice(2);
  const headers = { Authorization: `Bearer ${token}` };
  const runId = `r1-${threadId}`;
  const runner = new HttpAgent({
    url: `${base}/agent/runs`,
    threadId,
    headers,
    initialMessages: [{ id: `m1-${threadId}`, role: "user", content: text }],
  });
  const live = [];
  const running = runner.runAgent({ runId }, { onEvent: ({ event }) => live.push(event) });
  while (!live.some((e) => e.type === "ACTIVITY_SNAPSHOT")) await sleep(50);

  const follower = new ReattachingAgent({ url: base, threadId, headers });
  const followed = [];
  await follower.connectAgent({ runId }, { onEvent: ({ event }) => followed.push(event) });
  await running;
  return {
    live: live.map((e) => e.type),
    liveActivity: live.filter((e) => e.type.startsWith("ACTIVITY_")),
    liveMessages: runner.messages,
    followed: followed.map((e) => e.type),
    snapshot: followed.find((e) => e.type === "MESSAGES_SNAPSHOT"),
    followedMessages: follower.messages,
  };
}

main().then(
  (report) => console.log(JSON.stringify({ ...report, warnings })),
  (error) => {
    console.log(JSON.stringify({ error: String((error && error.stack) || error), warnings }));
    process.exit(1);
  },
);
