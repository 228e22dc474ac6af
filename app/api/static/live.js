// @ts-check
/** The live answer: one run's AG-UI events rendered into the transcript as they stream, or replayed
 * when its chat is shown again (a run goes on in the background while other chats are used). Only
 * what the user sees happens here; what a run means for its chat is kept in runs.js. */
import { applyActivity } from "./activity.js";
import { renderMarkdown } from "./markdown.js";
import { addExtras, el, state, ui } from "./page.js";
import { reasoningBlock, scrollDown, toolBlock } from "./transcript.js";

/** @typedef {import("./api.js").AgUiEvent} AgUiEvent */
/** @typedef {import("./tools.js").ToolView} ToolView */

/** An assistant item in the transcript, not yet known to the history. */
function assistantItem() {
  return el("li", { class: "msg assistant live", "aria-label": "assistant message" });
}

/** Renders one run's events into the message list (only while its chat is the one shown). */
export class LiveRun {
  /** @param {string} sessionId */
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.known = new Set(state.history.map((m) => m.id)); // already shown from history: never twice
    /** @type {Map<string, HTMLElement>} */ this.texts = new Map();
    /** @type {Map<string, HTMLElement>} */ this.thoughts = new Map();
    /** @type {HTMLElement | null} */ this.thinking = null; // the live item reasoning streams into
    /** @type {Map<string, {view: ToolView, item: HTMLElement}>} */ this.tools = new Map();
    /** @type {HTMLElement | null} */ this.lastItem = null;
    /** @type {HTMLElement | null} */ this.waiting = null; // "thinking…" until the first token
  }

  /** Show "thinking…" until something of the answer arrives. */
  showWaiting() {
    if (this.waiting || this.lastItem || this.thinking) return;
    this.waiting = assistantItem();
    this.waiting.classList.add("waiting");
    this.waiting.setAttribute("aria-label", "assistant is thinking");
    this.waiting.append(el("span", { class: "marker thinking" }, ["thinking…"]));
    ui.messages.append(this.waiting);
    scrollDown();
  }

  dropWaiting() {
    if (this.waiting) this.waiting.remove();
    this.waiting = null;
  }

  /** The items this run added that the history does not hold (a partial answer, its tool calls). */
  items() {
    return /** @type {HTMLElement[]} */ (Array.from(ui.messages.querySelectorAll("li.live"))).filter((item) => item !== this.waiting);
  }

  /** @param {AgUiEvent} event */
  apply(event) {
    switch (event.type) {
      case "REASONING_MESSAGE_START": {
        this.dropWaiting();
        const block = reasoningBlock("", true);
        if (!this.thinking) {
          this.thinking = assistantItem();
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
        this.dropWaiting();
        const text = el("div", { class: "text" });
        // The answer joins the reasoning that preceded it, as history shows them.
        const item = this.thinking || assistantItem();
        item.setAttribute("data-message-id", event.messageId);
        item.setAttribute("aria-busy", "true");
        item.append(text);
        this.thinking = null;
        if (!item.isConnected) ui.messages.append(item);
        this.texts.set(event.messageId, text);
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
        this.dropWaiting();
        const view = { name: event.toolCallName, args: "" };
        const item = el("li", { class: "msg tool live", "aria-label": "tool message" });
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
      default:
        applyActivity(event, (toolCallId) => this.tools.get(toolCallId)?.item);
        break;
    }
  }
}
