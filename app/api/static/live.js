// @ts-check
/** The live answer: a run's AG-UI events rendered as they stream (or are replayed on re-attach), Stop, and approvals. */
import { ApiError, events, getStream, json, postStream, uuid4 } from "./api.js";
import { refresh } from "./chats.js";
import { clearError, showError } from "./feedback.js";
import { renderMarkdown } from "./markdown.js";
import { $, addExtras, base, el, keys, state, stored, ui, usageText } from "./page.js";
import { reasoningBlock, scrollDown, toolBlock } from "./transcript.js";

/** @typedef {import("./api.js").AgUiEvent} AgUiEvent */
/** @typedef {import("./api.js").AgentModel} AgentModel */
/** @typedef {import("./api.js").ChatMessage} ChatMessage */
/** @typedef {import("./api.js").ChatPart} ChatPart */
/** @typedef {import("./api.js").SessionOut} SessionOut */
/** @typedef {import("./api.js").UploadLimits} UploadLimits */
/** @typedef {import("./api.js").UploadOut} UploadOut */
/** @typedef {"image" | "document" | "audio"} Kind */
/** @typedef {import("./tools.js").ToolView} ToolView */
/** @typedef {{usage?: string, tool?: ToolView}} Extras */
/** @typedef {{pages?: number | null, thumbnailUrl?: string | null, durationSeconds?: number | null}} Facts What an upload answer (or history) says about a file, shown on its chip. */
/** @typedef {{key: string, name: string, kind: Kind, status: "uploading" | "ready" | "failed", progress: number, part?: ChatPart, facts?: Facts, error?: string}} Attachment */
/** @typedef {{runId: string | null, lastEventId: string | null, events: AgUiEvent[]}} RunLog */

// -- the live answer --------------------------------------------------------------------------------

/** Renders one run's events into the message list as they arrive (or as they are replayed). */
export class LiveRun {
  /** @param {string} sessionId */
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.known = new Set(state.history.map((m) => m.id)); // already shown from history: never twice
    /** @type {Map<string, HTMLElement>} */ this.texts = new Map();
    /** @type {Map<string, HTMLElement>} */ this.thoughts = new Map();
    /** @type {HTMLElement | null} */ this.thinking = null; // the live item reasoning streams into
    /** @type {Map<string, {view: ToolView, item: HTMLElement}>} */ this.tools = new Map();
    /** @type {string | null} */ this.lastAssistant = null;
    /** @type {HTMLElement | null} */ this.lastItem = null;
    this.ended = false;
  }

  /** @param {AgUiEvent} event */
  apply(event) {
    switch (event.type) {
      case "RUN_STARTED":
        state.runId = event.runId;
        setRunning(true);
        break;
      case "REASONING_MESSAGE_START": {
        const block = reasoningBlock("", true);
        if (!this.thinking) {
          this.thinking = el("li", { class: "msg assistant", "aria-label": "assistant message" });
          ui.messages.append(this.thinking);
        }
        this.thinking.append(block);
        this.thoughts.set(event.messageId, /** @type {HTMLElement} */ (block.querySelector(".text")));
        break;
      }
      case "REASONING_MESSAGE_CONTENT": {
        const text = this.thoughts.get(event.messageId);
        if (text) text.textContent += event.delta;
        scrollDown();
        break;
      }
      case "REASONING_END":
        if (this.thinking) for (const block of this.thinking.querySelectorAll("details")) /** @type {HTMLDetailsElement} */ (block).open = false;
        break;
      case "TEXT_MESSAGE_START": {
        if (this.known.has(event.messageId)) break;
        const text = el("div", { class: "text" });
        // The answer joins the reasoning that preceded it, as history shows them.
        const item = this.thinking || el("li", { class: "msg assistant", "aria-label": "assistant message" });
        item.setAttribute("data-message-id", event.messageId);
        item.append(text);
        this.thinking = null;
        if (!item.isConnected) ui.messages.append(item);
        this.texts.set(event.messageId, text);
        this.lastAssistant = event.messageId;
        this.lastItem = item;
        break;
      }
      case "TEXT_MESSAGE_CONTENT": {
        const text = this.texts.get(event.messageId);
        if (text) renderMarkdown(text, (text.dataset.markdown || "") + event.delta);
        scrollDown();
        break;
      }
      case "TOOL_CALL_START": {
        const view = { name: event.toolCallName, args: "" };
        const item = el("li", { class: "msg tool", "aria-label": "tool message" });
        item.append(toolBlock(view));
        ui.messages.append(item);
        this.tools.set(event.toolCallId, { view, item });
        break;
      }
      case "TOOL_CALL_ARGS": {
        const tool = this.tools.get(event.toolCallId);
        if (tool) {
          tool.view.args += event.delta;
          tool.item.replaceChildren(toolBlock(tool.view));
        }
        break;
      }
      case "TOOL_CALL_RESULT": {
        const tool = this.tools.get(event.toolCallId);
        const output = (event.metadata || {})["iris/toolAgentOutput"];
        /** @type {ToolView} */
        const view = tool ? tool.view : { name: output ? output.toolName : "tool", args: "" };
        view.summary = output ? output.resultSummary : event.content;
        view.output = output;
        if (tool) tool.item.replaceChildren(toolBlock(view));
        addExtras(this.sessionId, event.messageId, { tool: { name: view.name, args: view.args, summary: view.summary } });
        break;
      }
      case "RUN_FINISHED": {
        const usage = usageText(event.usage);
        if (usage && this.lastAssistant) addExtras(this.sessionId, this.lastAssistant, { usage });
        const outcome = event.outcome || {};
        if (outcome.type === "interrupt" && outcome.interrupts && outcome.interrupts.length) {
          stored.set(keys.interrupt(this.sessionId), outcome.interrupts[0]);
        }
        this.ended = true;
        break;
      }
      case "RUN_ERROR":
        ui.error.textContent = `${event.message} (${event.code || "run_error"})`;
        this.ended = true;
        break;
      default:
        break;
    }
  }
}

/**
 * Read a run's stream to its end, logging each event so a reload can re-attach where it left off.
 * @param {Response} response
 * @param {string} sessionId
 * @param {RunLog | null} replay the events seen before a reload, shown again first
 */
export async function follow(response, sessionId, replay) {
  const live = new LiveRun(sessionId);
  /** @type {RunLog} */
  const log = replay || { runId: null, lastEventId: null, events: [] };
  for (const event of log.events) live.apply(event);
  try {
    for await (const { id, event } of events(response)) {
      live.apply(event);
      log.events.push(event);
      if (id) log.lastEventId = id;
      if (event.type === "RUN_STARTED") log.runId = event.runId;
      stored.set(keys.log(sessionId), live.ended ? null : log);
    }
  } catch (error) {
    showError(new ApiError(`The answer stream broke off (${error}); reload to re-attach.`, "stream_interrupted", 0));
    state.runId = null;
    setRunning(false);
    return;
  }
  stored.set(keys.log(sessionId), null);
  state.runId = null;
  if (state.sessionId === sessionId) {
    await refresh();
    showInterrupt(stored.get(keys.interrupt(sessionId)));
  }
  setRunning(false);
}

/** @param {string} sessionId */
export async function reattach(sessionId) {
  /** @type {RunLog | null} */
  const log = stored.get(keys.log(sessionId));
  try {
    const response = await getStream(
      `${base}/chat/stream?sessionId=${encodeURIComponent(sessionId)}`,
      log ? log.lastEventId : null,
    );
    if (!response) {
      stored.set(keys.log(sessionId), null);
      return;
    }
    await follow(response, sessionId, log);
  } catch (error) {
    showError(error);
  }
}

/** @param {boolean} running */
export function setRunning(running) {
  ui.stop.hidden = !running;
  ui.send.disabled = running;
  for (const button of ui.messages.querySelectorAll(".actions > button")) {
    /** @type {HTMLButtonElement} */ (button).disabled = running;
  }
}

/** @param {Record<string, unknown>} body */
export async function run(body) {
  clearError();
  const sessionId = state.sessionId || uuid4();
  state.sessionId = sessionId;
  state.runId = "";
  setRunning(true);
  let response;
  try {
    response = await postStream(`${base}/chat`, { sessionId, modelId: ui.model.value || undefined, ...body });
  } catch (error) {
    state.runId = null;
    setRunning(false);
    showError(error);
    return false;
  }
  stored.set(keys.session(), sessionId);
  await follow(response, sessionId, null);
  return true;
}

ui.stop.addEventListener("click", async () => {
  if (!state.runId) return;
  try {
    await json(`/agent/runs/${encodeURIComponent(state.runId)}/cancel`, { method: "POST" });
  } catch (error) {
    showError(error);
  }
});

// -- approval interrupts ----------------------------------------------------------------------------

/** @param {{id: string, message?: string} | null} interrupt */
export function showInterrupt(interrupt) {
  ui.approval.hidden = !interrupt;
  ui.approvalQuestion.textContent = interrupt ? interrupt.message || "The assistant asks for approval." : "";
  ui.approval.dataset.interruptId = interrupt ? interrupt.id : "";
}

/** @param {"resolved" | "cancelled"} status */
export async function answerInterrupt(status) {
  const interruptId = ui.approval.dataset.interruptId;
  if (!interruptId || !state.sessionId) return;
  const sessionId = state.sessionId;
  ui.approval.hidden = true;
  stored.set(keys.interrupt(sessionId), null);
  const ok = await run({ resume: [{ interruptId, status }] });
  if (!ok) showInterrupt({ id: interruptId, message: ui.approvalQuestion.textContent || "" });
}
$("approve").addEventListener("click", () => answerInterrupt("resolved"));
$("deny").addEventListener("click", () => answerInterrupt("cancelled"));
