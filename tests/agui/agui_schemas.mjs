// @ag-ui/core's own zod schemas on events read as JSON lines from stdin: one JSON line out per event,
// {"type", "ok", "issues"}. Stricter than the Python types in places (REASONING_MESSAGE_START's role).
import { EventSchema } from "@ag-ui/core/schemas";
import { createInterface } from "node:readline";

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const event = JSON.parse(line);
  const parsed = EventSchema.safeParse(event);
  const issues = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  console.log(JSON.stringify({ type: event.type, ok: parsed.success, issues }));
}
