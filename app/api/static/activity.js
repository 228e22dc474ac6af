// @ts-check
/** A running tool's progress on the chat page: the run's `iris/toolProgress` activity (`ACTIVITY_SNAPSHOT`,
 * then `ACTIVITY_DELTA` JSON Patches) as one line under the tool call, its message and percentage, until
 * the call answers (its result redraws the call without the line). */

/** @typedef {{type: string, [key: string]: any}} ActivityEvent */

/** Each activity's content so far, by its `messageId`. @type {Map<string, Record<string, any>>} */
const contents = new Map();

/**
 * Apply one RFC 6902 operation of the kinds Iris sends (add, replace, remove) to the content.
 * @param {Record<string, any>} content
 * @param {{op: string, path: string, value?: unknown}} op
 */
function patch(content, op) {
  const [key, index] = op.path.split("/").slice(1);
  if (index === "-" && Array.isArray(content[key])) content[key].push(op.value);
  else if (op.op === "remove") delete content[key];
  else content[key] = op.value;
}

/**
 * The line's text: the message, and the percentage when the total is known.
 * @param {Record<string, any>} content
 */
export function progressText(content) {
  const { progress, total, message } = content;
  const amount = typeof total === "number" && total > 0 ? `${Math.round((100 * progress) / total)}%` : String(progress ?? "");
  return [message, amount].filter(Boolean).join(" · ");
}

/**
 * Show an activity event under its tool call; `false` for any other event.
 * @param {ActivityEvent} event
 * @param {(toolCallId: string) => HTMLElement | undefined} itemFor the tool call's list item
 */
export function applyActivity(event, itemFor) {
  if (event.activityType !== "iris/toolProgress") return false;
  if (event.type === "ACTIVITY_SNAPSHOT") contents.set(event.messageId, structuredClone(event.content));
  else if (event.type === "ACTIVITY_DELTA" && contents.has(event.messageId)) {
    for (const op of event.patch) patch(/** @type {Record<string, any>} */ (contents.get(event.messageId)), op);
  } else return false;
  const content = /** @type {Record<string, any>} */ (contents.get(event.messageId));
  const item = itemFor(content.toolCallId);
  if (!item) return true;
  let line = /** @type {HTMLElement | null} */ (item.querySelector(".tool-progress"));
  if (content.status !== "running") {
    line?.remove();
    return true;
  }
  if (!line) {
    line = document.createElement("p");
    line.className = "tool-progress";
    line.setAttribute("role", "status");
    item.append(line);
  }
  line.textContent = progressText(content);
  return true;
}
