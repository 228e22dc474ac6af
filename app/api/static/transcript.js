// @ts-check
/** The transcript: a chat's history as messages, with their attachments, reasoning, tool calls and versions. */
import { refocusSwitcher, showVersion, versionSwitcher } from "./branches.js";
import { refresh } from "./chats.js";
import { regenerate, startEdit } from "./composer.js";
import { showError } from "./feedback.js";
import { json } from "./api.js";
import { copyText, decorateCode, renderMarkdown } from "./markdown.js";
import { base, duration, el, extrasOf, state, ui, usageText } from "./page.js";
import { openPreview } from "./preview.js";
import { runningHere, showLive } from "./runs.js";
import { callsById, historyTool, toolCard } from "./tools.js";

/** @typedef {import("./api.js").ChatMessage} ChatMessage */
/** @typedef {import("./api.js").ChatPart} ChatPart */
/** @typedef {import("./tools.js").ToolView} ToolView */
/** @typedef {{pages?: number | null, thumbnailUrl?: string | null, durationSeconds?: number | null}} Facts What an upload answer (or history) says about a file, shown on its chip. */

// -- messages ---------------------------------------------------------------------------------------

/** @param {string} url @param {string} name */
export function imageButton(url, name) {
  const img = el("img", { src: url, alt: name });
  const button = el("button", { type: "button", "aria-label": `Enlarge image ${name}` }, [img]);
  button.addEventListener("click", () => openPreview(url, name));
  return button;
}

/**
 * A PDF as a chip: its first-page thumbnail (when known), name, page count; the name opens it.
 * @param {{url: string, name: string, pages?: number | null, thumbnailUrl?: string | null}} doc
 */
export function documentChip(doc) {
  const link = el("a", { href: doc.url, target: "_blank", rel: "noopener noreferrer", class: "doc-name" }, [doc.name]);
  const children = [];
  if (doc.thumbnailUrl) children.push(el("img", { src: doc.thumbnailUrl, alt: `First page of ${doc.name}`, class: "thumbnail" }));
  children.push(link);
  if (doc.pages) children.push(el("span", { class: "facts" }, [`${doc.pages} ${doc.pages === 1 ? "page" : "pages"}`]));
  return el("span", { class: "chip document", "aria-label": `PDF ${doc.name}` }, children);
}

/**
 * An audio file as a chip: a player, its name and length.
 * @param {{url: string, name: string, durationSeconds?: number | null}} clip
 */
export function audioChip(clip) {
  const player = el("audio", { controls: "", preload: "metadata", src: clip.url, "aria-label": `Play ${clip.name}` });
  const children = [player, el("span", { class: "doc-name" }, [clip.name])];
  if (clip.durationSeconds) children.push(el("span", { class: "facts" }, [duration(clip.durationSeconds)]));
  return el("span", { class: "chip audio", "aria-label": `Audio ${clip.name}` }, children);
}

/**
 * The attachments of a message, as history and a sent message show them (``facts`` by part, for parts
 * just uploaded; history parts carry their own).
 * @param {ChatPart[]} parts @param {Map<ChatPart, Facts>} [facts]
 */
export function mediaOf(parts, facts = new Map()) {
  return parts.flatMap((p) => {
    const known = facts.get(p) || {};
    if (p.type === "image") return [imageButton(p.image, p.name)];
    if (p.type === "document") {
      return [documentChip({ url: p.document, name: p.name, pages: p.pages ?? known.pages, thumbnailUrl: p.thumbnailUrl ?? known.thumbnailUrl })];
    }
    if (p.type === "audio") return [audioChip({ url: p.audio, name: p.name, durationSeconds: p.durationSeconds ?? known.durationSeconds })];
    return [];
  });
}

/** A history part as the chat surface takes it back (an edit re-sends it): only the fields it accepts. @param {ChatPart} p @returns {ChatPart | null} */
export function resendable(p) {
  if (p.type === "image") return { type: "image", image: p.image, mimeType: p.mimeType, name: p.name };
  if (p.type === "document") return { type: "document", document: p.document, mimeType: p.mimeType, name: p.name };
  if (p.type === "audio") return { type: "audio", audio: p.audio, mimeType: p.mimeType, name: p.name };
  return null;
}

/** "14:02" today, "3 Dec 14:02" before. @param {string} iso */
function when(iso) {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return "";
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return at.toDateString() === new Date().toDateString() ? time : `${at.toLocaleDateString([], { day: "numeric", month: "short" })} ${time}`;
}

/** A message's foot: when it was written, its usage, a copy button. @param {ChatMessage} message @param {string | null} usage @param {string} text */
function meta(message, usage, text) {
  const foot = el("div", { class: "meta" });
  if (usage) foot.append(el("span", { class: "usage" }, [`Usage: ${usage}`]));
  if (message.createdAt) foot.append(el("time", { datetime: message.createdAt, title: new Date(message.createdAt).toLocaleString() }, [when(message.createdAt)]));
  if (text) {
    const copy = /** @type {HTMLButtonElement} */ (el("button", { type: "button", "aria-label": "Copy this message" }, ["Copy"]));
    copy.addEventListener("click", () => copyText(copy, text));
    foot.append(copy);
  }
  return foot;
}

/** The text of a message's text parts. @param {ChatMessage} message */
function textOf(message) {
  return message.parts.filter((p) => p.type === "text").map((p) => (p.type === "text" ? p.text : "")).join("\n");
}

export function renderHistory() {
  const extras = state.sessionId ? extrasOf(state.sessionId) : {};
  const lastAssistant = [...state.history].reverse().find((m) => m.role === "assistant");
  const calls = callsById(state.history);
  const items = [];
  /** @type {string[]} */
  let carried = []; // the usage of turns that only called a tool, shown with the answer that follows
  for (const message of state.history) {
    const extra = extras[message.id] || {};
    const own = message.usage ? usageText([message.usage]) : null;
    if (message.role === "assistant" && !message.content && !message.parts.some((p) => p.type === "reasoning")) {
      if (own) carried.push(own);
      continue; // a turn that only called a tool: its call shows as the tool's card
    }
    const usage = message.role === "assistant" && (own || carried.length) ? [...carried, ...(own ? [own] : [])].join("; ") : null;
    if (message.role === "assistant") carried = [];
    const item = el("li", { class: `msg ${message.role}`, "data-message-id": message.id, "aria-label": `${message.role} message` });
    const text = textOf(message);
    if (message.role === "tool") {
      const read = state.sessionId ? linkReader(state.sessionId, message.id) : undefined;
      item.append(toolBlock(message.toolOutput || !extra.tool ? historyTool(message, calls) : extra.tool, read));
    } else {
      const media = mediaOf(message.parts);
      if (media.length) item.append(el("div", { class: "images" }, media));
      for (const part of message.parts) {
        if (part.type === "reasoning") item.append(reasoningBlock(part.redacted ? null : part.text, false));
      }
      if (text) {
        const box = el("div", { class: "text" });
        if (message.role === "assistant") {
          renderMarkdown(box, text);
          decorateCode(box);
        } else box.textContent = text;
        item.append(box);
      }
    }
    if (extra.stopped) item.append(el("div", { class: "marker stopped" }, ["Stopped"]));
    item.append(meta(message, usage, message.role === "tool" ? "" : text));
    const actions = el("div", { class: "actions" });
    if (message.role === "user") {
      const edit = el("button", { type: "button" }, ["Edit"]);
      edit.addEventListener("click", () => startEdit(message));
      actions.append(edit);
    }
    if (message === lastAssistant) {
      const again = el("button", { type: "button" }, ["Regenerate"]);
      again.addEventListener("click", () => regenerate());
      actions.append(again);
    }
    const versions = versionSwitcher(message, (id) => switchVersion(message, id));
    if (versions) actions.prepend(versions);
    if (actions.childElementCount) item.append(actions);
    items.push(item);
  }
  ui.messages.replaceChildren(...items);
  ui.greeting.hidden = items.length > 0;
  showLive();
  scrollDown();
}

/**
 * Show another version of a message (and the newest line through it), keeping the keyboard there.
 * @param {ChatMessage} message @param {string} versionId
 */
export async function switchVersion(message, versionId) {
  if (!state.sessionId || runningHere()) return;
  const forward = (message.siblings || []).indexOf(versionId) > (message.siblingIndex ?? 0);
  try {
    await showVersion(base, state.sessionId, versionId);
  } catch (error) {
    showError(error);
    return;
  }
  await refresh();
  refocusSwitcher(ui.messages, versionId, forward ? "Next version" : "Previous version");
}

export function scrollDown() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

/**
 * What the model thought before answering, folded away once the answer is there.
 * @param {string | null} text null: the vendor hid it
 * @param {boolean} open
 */
export function reasoningBlock(text, open) {
  const body = el("div", { class: "text" }, [text === null ? "The model's reasoning is hidden." : text]);
  const block = el("details", { class: "reasoning", "aria-label": "Reasoning" }, [el("summary", {}, ["Thinking"]), body]);
  /** @type {HTMLDetailsElement} */ (block).open = open;
  return block;
}

/**
 * @param {ToolView} tool
 * @param {import("./tools.js").ReadLink} [read]
 */
export function toolBlock(tool, read) {
  return toolCard(tool, openPreview, read);
}

/**
 * Reads the resource links of one stored tool message (ADR 0084).
 * @param {string} sessionId
 * @param {string} messageId
 * @returns {import("./tools.js").ReadLink}
 */
function linkReader(sessionId, messageId) {
  const path = `${base}/sessions/${encodeURIComponent(sessionId)}/messages/${encodeURIComponent(messageId)}`;
  return (index) => json(`${path}/resource-links/${index}/read`, { method: "POST" });
}
