// @ts-check
/** The chat page: seed 002 §3 on the chat surface, talking only to the public JSON API. */
import { ApiError, events, getStream, json, postStream, setToken, token, upload, uuid4 } from "./api.js";
import { clearAgents, loadAgents, watchAgentPicker } from "./agents.js";
import { refocusSwitcher, showVersion, versionSwitcher } from "./branches.js";
import { jumpTo, setUpSearch } from "./search.js";
import { SessionList } from "./sessions.js";
import { renderMarkdown } from "./markdown.js";
import { callsById, historyTool, toolCard } from "./tools.js";
import { applyActivity } from "./activity.js";

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

/** What the server takes (``GET /agent/capabilities``, ``custom["iris/uploadLimits"]``); these stand in
 * only until it answers. @type {UploadLimits} */
const limits = {
  acceptedTypes: ["image/png", "image/jpeg", "image/webp"],
  maxImageBytes: 5 * 1024 * 1024,
  maxImagesPerMessage: 4,
  maxDocumentsPerMessage: 0,
  maxAudioPerMessage: 0,
  maxDocumentBytes: 0,
  maxDocumentPages: 0,
  maxAudioBytes: 0,
  maxAudioSeconds: 0,
};
const NOUN = { image: "images", document: "PDFs", audio: "audio files" };
const slugMatch = location.pathname.match(/^\/chat\/([^/]+)/);
const slug = decodeURIComponent(slugMatch ? slugMatch[1] : "default");
const base = `/api/agents/${encodeURIComponent(slug)}`;

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
function $(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`#${id} is missing`);
  return /** @type {T} */ (element);
}

const ui = {
  signin: $("signin"),
  account: $("account"),
  who: $("who"),
  tokenInput: /** @type {HTMLInputElement} */ ($("token-input")),
  sessions: $("sessions"),
  model: /** @type {HTMLSelectElement} */ ($("model")),
  visionHint: $("vision-hint"),
  think: /** @type {HTMLInputElement} */ ($("think")),
  thinkLabel: $("think-label"),
  messages: $("messages"),
  approval: $("approval"),
  approvalQuestion: $("approval-question"),
  error: $("error"),
  composer: /** @type {HTMLFormElement} */ ($("composer")),
  editing: $("editing"),
  attachments: $("attachments"),
  attachHint: $("attach-hint"),
  attachLabel: $("attach-label"),
  file: /** @type {HTMLInputElement} */ ($("file")),
  attachText: $("attach-text"),
  text: /** @type {HTMLTextAreaElement} */ ($("text")),
  send: /** @type {HTMLButtonElement} */ ($("send")),
  stop: /** @type {HTMLButtonElement} */ ($("stop")),
  preview: $("preview"),
  previewImage: /** @type {HTMLImageElement} */ ($("preview-image")),
};

const state = {
  /** @type {AgentModel[]} */ models: [],
  /** @type {string | null} */ sessionId: null,
  /** @type {ChatMessage[]} */ history: [],
  /** @type {Attachment[]} */ attachments: [],
  /** @type {string | null} */ editing: null,
  /** @type {string | null} */ runId: null,
};

// -- small helpers ----------------------------------------------------------------------------------

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 */
function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children);
  return node;
}

/** @param {unknown} error */
function showError(error) {
  if (error instanceof ApiError) {
    ui.error.textContent = `${error.detail} (${error.code})${retryText(error)}`;
    if (error.status === 401) signedOut();
  } else {
    ui.error.textContent = String(error);
  }
}

/** " Try again in 30 s (at 14:02:10)." for a 429 that says when; "" otherwise. @param {ApiError} error */
function retryText(error) {
  if (error.status !== 429) return "";
  if (error.retryAfter === null) return " Try again later.";
  const at = new Date(Date.now() + error.retryAfter * 1000).toLocaleTimeString();
  return ` Try again in ${Math.ceil(error.retryAfter)} s (at ${at}).`;
}

function clearError() {
  ui.error.textContent = "";
}

const stored = {
  /** @param {string} key */
  get(key) {
    const raw = sessionStorage.getItem(key);
    return raw ? JSON.parse(raw) : null;
  },
  /** @param {string} key @param {unknown} value */
  set(key, value) {
    if (value === null) sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, JSON.stringify(value));
  },
};
const keys = {
  session: () => `iris.session.${slug}`,
  /** @param {string} id */ extras: (id) => `iris.extras.${id}`,
  /** @param {string} id */ log: (id) => `iris.run.${id}`,
  /** @param {string} id */ interrupt: (id) => `iris.interrupt.${id}`,
};

/** @param {string} sessionId @returns {Record<string, Extras>} */
function extrasOf(sessionId) {
  return stored.get(keys.extras(sessionId)) || {};
}

/** @param {string} sessionId @param {string} messageId @param {Extras} extra */
function addExtras(sessionId, messageId, extra) {
  const all = extrasOf(sessionId);
  all[messageId] = { ...all[messageId], ...extra };
  stored.set(keys.extras(sessionId), all);
}

/** @param {any[] | undefined} usage */
function usageText(usage) {
  if (!usage || !usage.length) return null;
  return usage
    .map((u) => {
      const counts = [u.inputTokens != null ? `${u.inputTokens} in` : null, u.outputTokens != null ? `${u.outputTokens} out` : null];
      return [u.provider && u.model ? `${u.provider}/${u.model}` : null, ...counts].filter(Boolean).join(" · ");
    })
    .join("; ");
}

function currentModel() {
  return state.models.find((m) => m.id === ui.model.value) || null;
}

/** Whether the chosen model reads ``kind`` (from its ``pdf`` and ``audio``, or, on a server without them, its type). @param {Kind} kind */
function reads(kind) {
  const model = currentModel();
  if (!model) return kind === "image";
  if (kind === "document" && model.pdf !== undefined) return model.pdf;
  if (kind === "audio" && model.audio !== undefined) return model.audio.length > 0;
  return kind === "image" ? model.type !== "text" : model.type === "multimodal";
}

function visionOn() {
  return reads("image") || reads("document") || reads("audio");
}

/** The most ``kind`` files one message may carry. @param {Kind} kind */
function perMessage(kind) {
  if (kind === "image") return limits.maxImagesPerMessage;
  return kind === "document" ? limits.maxDocumentsPerMessage : limits.maxAudioPerMessage;
}

/** What the browser says a file is: only a hint for friendly refusals (the server sniffs the bytes). @param {File} file @returns {Kind} */
function kindOf(file) {
  const name = (file.name || "").toLowerCase();
  if (file.type === "application/pdf" || name.endsWith(".pdf")) return "document";
  if (file.type.startsWith("audio/") || name.endsWith(".wav") || name.endsWith(".mp3")) return "audio";
  return "image";
}

/** @param {number} bytes */
function megabytes(bytes) {
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
}

/** @param {number} seconds */
function duration(seconds) {
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

async function loadLimits() {
  try {
    const answer = await json("/agent/capabilities");
    const found = answer.custom && answer.custom["iris/uploadLimits"];
    if (found) Object.assign(limits, found);
  } catch {
    // The stand-ins above hold until the server answers; uploads are checked there anyway.
  }
  modelChanged();
}

// -- sign-in ----------------------------------------------------------------------------------------

function signedOut() {
  setToken(null);
  clearAgents();
  ui.signin.hidden = false;
  ui.account.hidden = true;
}

/** @param {string} value */
async function signedIn(value) {
  setToken(value);
  ui.signin.hidden = true;
  ui.who.textContent = describeToken(value);
  await loadAgents(slug);
  await loadSessions();
  const remembered = stored.get(keys.session());
  ui.account.hidden = false; // shown once the page is ready to chat (a re-attached answer may still run)
  if (remembered) await openSession(remembered, { reattach: true });
  else newChat();
}

/** @param {string} value */
function describeToken(value) {
  try {
    const claims = JSON.parse(atob(value.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return claims.is_anonymous ? "Signed in as a guest" : `Signed in as ${claims.sub}`;
  } catch {
    return "Signed in";
  }
}

$("guest").addEventListener("click", async () => {
  clearError();
  try {
    const answer = await json("/api/auth/guest", { method: "POST" });
    await signedIn(answer.accessToken);
  } catch (error) {
    showError(error);
  }
});

$("use-token").addEventListener("click", async () => {
  clearError();
  const value = ui.tokenInput.value.trim();
  if (!value) return;
  ui.tokenInput.value = "";
  await signedIn(value);
});

$("signout").addEventListener("click", () => {
  stored.set(keys.session(), null);
  signedOut();
  ui.sessions.replaceChildren();
  newChat();
});

// -- models -----------------------------------------------------------------------------------------

async function loadModels() {
  try {
    const answer = await json(`${base}/models`);
    state.models = answer.models;
    ui.model.replaceChildren(
      ...state.models.map((m) => el("option", { value: m.id }, [`${m.name} (${m.type})`])),
    );
    if (answer.defaultModelId) ui.model.value = answer.defaultModelId;
    $("agent-name").textContent = slug;
  } catch (error) {
    showError(error);
  }
  modelChanged();
}

function modelChanged() {
  const model = currentModel();
  const on = visionOn();
  ui.attachLabel.hidden = !on;
  ui.visionHint.textContent = on ? "" : `${model ? model.name : "This model"} reads text only: files cannot be attached.`;
  const accepted = limits.acceptedTypes.filter((t) => reads(t.startsWith("image/") ? "image" : t === "application/pdf" ? "document" : "audio"));
  ui.file.accept = accepted.join(",");
  const kinds = /** @type {Kind[]} */ (["image", "document", "audio"]).filter((k) => reads(k));
  ui.attachText.textContent = kinds.length === 1 && kinds[0] === "image" ? "Attach images" : "Attach files";
  ui.thinkLabel.hidden = !(model && model.reasoning);
  if (ui.thinkLabel.hidden) ui.think.checked = false;
  renderAttachments();
}
ui.model.addEventListener("change", modelChanged);

// -- sessions ---------------------------------------------------------------------------------------

const sessionList = new SessionList({
  list: ui.sessions,
  more: /** @type {HTMLButtonElement} */ ($("more-sessions")),
  archived: /** @type {HTMLButtonElement} */ ($("archived-sessions")),
  importFile: /** @type {HTMLInputElement} */ ($("import-file")),
  base,
  current: () => state.sessionId,
  open: (id) => openSession(id, { reattach: true }),
  deleted: (id) => {
    if (id === state.sessionId) newChat();
  },
  error: showError,
});

async function loadSessions() {
  await sessionList.load();
}

function newChat() {
  state.sessionId = uuid4(); // uploads need a thread before the first message; the chat creates it
  state.history = [];
  stored.set(keys.session(), null);
  resetComposer();
  ui.approval.hidden = true;
  renderHistory();
}

/**
 * @param {string} id
 * @param {{reattach: boolean}} options
 */
async function openSession(id, options) {
  clearError();
  state.sessionId = id;
  resetComposer();
  try {
    const answer = await json(`${base}/sessions/${id}/messages`);
    state.history = answer.messages;
  } catch (error) {
    if (error instanceof ApiError && error.code === "thread_not_found") {
      newChat();
      return;
    }
    showError(error);
    return;
  }
  stored.set(keys.session(), id);
  renderHistory();
  showInterrupt(stored.get(keys.interrupt(id)));
  await loadSessions();
  if (options.reattach) await reattach(id);
}

async function refresh() {
  if (!state.sessionId) return;
  try {
    const answer = await json(`${base}/sessions/${state.sessionId}/messages`);
    state.history = answer.messages;
    stored.set(keys.session(), state.sessionId);
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "thread_not_found")) showError(error);
  }
  renderHistory();
  await loadSessions();
}

// -- messages ---------------------------------------------------------------------------------------

/** @param {string} url @param {string} name */
function imageButton(url, name) {
  const img = el("img", { src: url, alt: name });
  const button = el("button", { type: "button", "aria-label": `Enlarge image ${name}` }, [img]);
  button.addEventListener("click", () => openPreview(url, name));
  return button;
}

/**
 * A PDF as a chip: its first-page thumbnail (when known), name, page count; the name opens it.
 * @param {{url: string, name: string, pages?: number | null, thumbnailUrl?: string | null}} doc
 */
function documentChip(doc) {
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
function audioChip(clip) {
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
function mediaOf(parts, facts = new Map()) {
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
function resendable(p) {
  if (p.type === "image") return { type: "image", image: p.image, mimeType: p.mimeType, name: p.name };
  if (p.type === "document") return { type: "document", document: p.document, mimeType: p.mimeType, name: p.name };
  if (p.type === "audio") return { type: "audio", audio: p.audio, mimeType: p.mimeType, name: p.name };
  return null;
}

function renderHistory() {
  const extras = state.sessionId ? extrasOf(state.sessionId) : {};
  const lastAssistant = [...state.history].reverse().find((m) => m.role === "assistant");
  const calls = callsById(state.history);
  const items = [];
  for (const message of state.history) {
    const extra = extras[message.id] || {};
    const usage = extra.usage || (message.usage ? usageText([message.usage]) : null);
    if (message.role === "assistant" && !message.content && !usage) continue; // a turn that only called a tool
    const item = el("li", { class: `msg ${message.role}`, "data-message-id": message.id, "aria-label": `${message.role} message` });
    if (message.role === "tool") {
      item.append(toolBlock(message.toolOutput || !extra.tool ? historyTool(message, calls) : extra.tool));
    } else {
      const media = mediaOf(message.parts);
      if (media.length) item.append(el("div", { class: "images" }, media));
      for (const part of message.parts) {
        if (part.type === "reasoning") item.append(reasoningBlock(part.redacted ? null : part.text, false));
      }
      const text = message.parts.filter((p) => p.type === "text").map((p) => (p.type === "text" ? p.text : "")).join("\n");
      if (text) {
        const box = el("div", { class: "text" });
        if (message.role === "assistant") renderMarkdown(box, text);
        else box.textContent = text;
        item.append(box);
      }
    }
    if (usage) item.append(el("div", { class: "usage" }, [`Usage: ${usage}`]));
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
  setRunning(state.runId !== null);
  scrollDown();
}

/**
 * Show another version of a message (and the newest line through it), keeping the keyboard there.
 * @param {ChatMessage} message @param {string} versionId
 */
async function switchVersion(message, versionId) {
  if (!state.sessionId || state.runId !== null) return;
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

function scrollDown() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

/**
 * What the model thought before answering, folded away once the answer is there.
 * @param {string | null} text null: the vendor hid it
 * @param {boolean} open
 */
function reasoningBlock(text, open) {
  const body = el("div", { class: "text" }, [text === null ? "The model's reasoning is hidden." : text]);
  const block = el("details", { class: "reasoning", "aria-label": "Reasoning" }, [el("summary", {}, ["Thinking"]), body]);
  /** @type {HTMLDetailsElement} */ (block).open = open;
  return block;
}

/** @param {ToolView} tool */
function toolBlock(tool) {
  return toolCard(tool, openPreview);
}

// -- the live answer --------------------------------------------------------------------------------

/** Renders one run's events into the message list as they arrive (or as they are replayed). */
class LiveRun {
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
        applyActivity(event, (toolCallId) => this.tools.get(toolCallId)?.item);
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
async function follow(response, sessionId, replay) {
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
async function reattach(sessionId) {
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
function setRunning(running) {
  ui.stop.hidden = !running;
  ui.send.disabled = running;
  for (const button of ui.messages.querySelectorAll(".actions > button")) {
    /** @type {HTMLButtonElement} */ (button).disabled = running;
  }
}

/** @param {Record<string, unknown>} body */
async function run(body) {
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
function showInterrupt(interrupt) {
  ui.approval.hidden = !interrupt;
  ui.approvalQuestion.textContent = interrupt ? interrupt.message || "The assistant asks for approval." : "";
  ui.approval.dataset.interruptId = interrupt ? interrupt.id : "";
}

/** @param {"resolved" | "cancelled"} status */
async function answerInterrupt(status) {
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

// -- composer ---------------------------------------------------------------------------------------

function liveAttachments() {
  return state.attachments.filter((a) => a.status !== "failed");
}

/** @param {Kind} kind */
function countOf(kind) {
  return liveAttachments().filter((a) => a.kind === kind).length;
}

function renderAttachments() {
  const kinds = /** @type {Kind[]} */ (["image", "document", "audio"]).filter((k) => reads(k));
  const full = kinds.length > 0 && kinds.every((k) => countOf(k) >= perMessage(k));
  const fullText = `At most ${kinds.map((k) => `${perMessage(k)} ${NOUN[k]}`).join(", ")} per message.`;
  ui.file.disabled = full;
  ui.attachLabel.classList.toggle("disabled", full);
  ui.attachLabel.setAttribute("aria-disabled", String(full));
  if (full && !ui.attachHint.textContent) ui.attachHint.textContent = fullText;
  if (!full && ui.attachHint.textContent === fullText) ui.attachHint.textContent = "";
  ui.attachments.replaceChildren(
    ...state.attachments.map((a) => {
      const item = el("li", { "aria-label": `Attachment ${a.name}` });
      const part = a.status === "ready" ? a.part : undefined;
      if (a.status === "uploading") {
        item.append(el("progress", { max: "1", value: String(a.progress), "aria-label": `Uploading ${a.name}` }));
        item.append(el("span", {}, [a.name]));
      } else if (part && part.type === "image") {
        item.append(el("img", { src: part.image, alt: a.name }), el("span", {}, [a.name]));
      } else if (part && part.type === "document") {
        item.append(documentChip({ url: part.document, name: a.name, ...a.facts }));
      } else if (part && part.type === "audio") {
        item.append(audioChip({ url: part.audio, name: a.name, ...a.facts }));
      } else {
        item.append(el("span", { class: "failed" }, [`${a.name}: ${a.error}`]), el("span", {}, [a.name]));
      }
      const remove = el("button", { type: "button", "aria-label": `Remove ${a.name}` }, ["Remove"]);
      remove.addEventListener("click", () => {
        state.attachments = state.attachments.filter((x) => x !== a);
        ui.attachHint.textContent = "";
        renderAttachments();
      });
      item.append(remove);
      return item;
    }),
  );
  scrollDown(); // the composer grew or shrank: keep the newest message in view
}

/** Why ``file`` cannot be attached here, or null. @param {File} file @param {Kind} kind @param {string} how */
function refusal(file, kind, how) {
  const name = file.name || `the ${how} file`;
  if (!reads(kind)) return `${name} was not added: this model does not read ${NOUN[kind]}.`;
  if (countOf(kind) >= perMessage(kind)) return `At most ${perMessage(kind)} ${NOUN[kind]} per message: ${name} was not added.`;
  const max = kind === "image" ? limits.maxImageBytes : kind === "document" ? limits.maxDocumentBytes : limits.maxAudioBytes;
  if (max && file.size > max) return `${name} is larger than the ${megabytes(max)} limit for ${NOUN[kind]}.`;
  return null;
}

/**
 * Start uploading files picked, pasted or dropped; what the model cannot read, beyond the caps or over
 * the size limits is refused here, visibly.
 * @param {File[]} files
 * @param {string} how
 */
function addFiles(files, how) {
  if (!files.length) return;
  if (!visionOn()) {
    const noun = files.every((f) => kindOf(f) === "image") ? "image" : "file";
    ui.attachHint.textContent = `The ${how} ${noun} was ignored: this model reads text only.`;
    return;
  }
  if (!state.sessionId) state.sessionId = uuid4();
  const threadId = state.sessionId;
  for (const file of files) {
    const kind = kindOf(file);
    const refused = refusal(file, kind, how);
    if (refused) {
      ui.attachHint.textContent = refused;
      continue;
    }
    /** @type {Attachment} */
    const attachment = { key: uuid4(), name: file.name || `pasted ${kind}`, kind, status: "uploading", progress: 0 };
    state.attachments.push(attachment);
    upload(file, threadId, (fraction) => {
      attachment.progress = fraction;
      renderAttachments();
    })
      .then((answer) => {
        attachment.status = "ready";
        attachment.kind = answer.kind || kind;
        attachment.part = answer.parts.chat;
        attachment.facts = { pages: answer.pages, thumbnailUrl: answer.thumbnailUrl, durationSeconds: answer.durationSeconds };
      })
      .catch((error) => {
        attachment.status = "failed";
        attachment.error = error instanceof ApiError ? `${error.detail} (${error.code})${retryText(error)}` : String(error);
        showError(error);
      })
      .finally(renderAttachments);
  }
  renderAttachments();
}

ui.file.addEventListener("change", () => {
  addFiles(Array.from(ui.file.files || []), "chosen");
  ui.file.value = "";
});

ui.text.addEventListener("paste", (event) => {
  const files = Array.from(event.clipboardData ? event.clipboardData.items : [])
    .filter((item) => item.kind === "file" && limits.acceptedTypes.includes(item.type))
    .map((item) => item.getAsFile())
    .filter((file) => file !== null);
  if (!files.length) return;
  event.preventDefault();
  addFiles(/** @type {File[]} */ (files), "pasted");
});

ui.composer.addEventListener("dragover", (event) => {
  event.preventDefault();
  ui.composer.classList.add("dragging");
});
ui.composer.addEventListener("dragleave", () => ui.composer.classList.remove("dragging"));
ui.composer.addEventListener("drop", (event) => {
  event.preventDefault();
  ui.composer.classList.remove("dragging");
  addFiles(Array.from(event.dataTransfer ? event.dataTransfer.files : []), "dropped");
});

ui.text.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  } else if (event.key === "Escape" && state.editing) {
    resetComposer(); // Esc leaves an edit, as Cancel edit does
  }
});

function resetComposer() {
  state.attachments = [];
  state.editing = null;
  ui.editing.hidden = true;
  ui.text.value = "";
  ui.attachHint.textContent = "";
  renderAttachments();
}

/** @param {ChatMessage} message */
function startEdit(message) {
  state.editing = message.id;
  ui.editing.hidden = false;
  ui.text.value = message.parts.map((p) => (p.type === "text" ? p.text : "")).filter(Boolean).join("\n");
  state.attachments = message.parts.flatMap((p) => {
    const part = resendable(p);
    if (!part || part.type === "text" || part.type === "reasoning") return [];
    /** @type {Facts} */
    const facts = p.type === "document" ? { pages: p.pages, thumbnailUrl: p.thumbnailUrl } : p.type === "audio" ? { durationSeconds: p.durationSeconds } : {};
    return [{ key: uuid4(), name: part.name, kind: part.type, status: /** @type {const} */ ("ready"), progress: 1, part, facts }];
  });
  ui.attachHint.textContent = "";
  renderAttachments();
  ui.text.focus();
}
$("cancel-edit").addEventListener("click", resetComposer);

/** Hide what an edit or a regeneration replaces (the server marks it superseded). @param {number} from */
function dropFrom(from) {
  state.history = state.history.slice(0, from);
  renderHistory();
}

/** @param {ChatPart[]} parts @param {Attachment[]} attachments the parts' uploads, for their chips */
function showSent(parts, attachments) {
  const media = mediaOf(parts, new Map(attachments.flatMap((a) => (a.part ? [[a.part, a.facts || {}]] : []))));
  const text = parts.map((p) => (p.type === "text" ? p.text : "")).join("");
  const item = el("li", { class: "msg user", "aria-label": "user message" });
  if (media.length) item.append(el("div", { class: "images" }, media));
  if (text) item.append(el("div", { class: "text" }, [text]));
  ui.messages.append(item);
  scrollDown();
}

ui.composer.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (state.runId !== null) return;
  if (!token()) {
    ui.error.textContent = "Sign in first: continue as a guest or paste a token.";
    return;
  }
  if (state.attachments.some((a) => a.status === "uploading")) {
    ui.attachHint.textContent = "Wait for the uploads to finish.";
    return;
  }
  const text = ui.text.value.trim();
  /** @type {ChatPart[]} */
  const parts = [
    ...(text ? [/** @type {ChatPart} */ ({ type: "text", text })] : []),
    ...state.attachments.flatMap((a) => (a.status === "ready" && a.part ? [a.part] : [])),
  ];
  if (!parts.length) return;
  const editing = state.editing;
  /** @type {Record<string, unknown>} */
  const body = { parts };
  if (ui.think.checked) body.enableThinking = true;
  if (editing) {
    body.editMessageId = editing;
    const index = state.history.findIndex((m) => m.id === editing);
    if (index >= 0) dropFrom(index);
  }
  const saved = { text: ui.text.value, attachments: state.attachments, editing };
  resetComposer();
  showSent(parts, saved.attachments);
  const ok = await run(body);
  if (!ok) {
    // Nothing was sent: give the user their message back.
    ui.text.value = saved.text;
    state.attachments = saved.attachments;
    state.editing = saved.editing;
    ui.editing.hidden = !saved.editing;
    renderAttachments();
    await refresh();
  }
});

async function regenerate() {
  const lastUser = state.history.map((m) => m.role).lastIndexOf("user");
  if (lastUser >= 0) dropFrom(lastUser + 1);
  const ok = await run(ui.think.checked ? { regenerate: true, enableThinking: true } : { regenerate: true });
  if (!ok) await refresh();
}

$("new-chat").addEventListener("click", () => {
  clearError();
  newChat();
  loadSessions();
});

// -- image preview ----------------------------------------------------------------------------------

/** @param {string} url @param {string} name */
function openPreview(url, name) {
  ui.previewImage.src = url;
  ui.previewImage.alt = name;
  ui.preview.hidden = false;
  $("preview-close").focus();
}

function closePreview() {
  ui.preview.hidden = true;
  ui.previewImage.removeAttribute("src");
}
$("preview-close").addEventListener("click", closePreview);
ui.preview.addEventListener("click", (event) => {
  if (event.target === ui.preview) closePreview();
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !ui.preview.hidden) closePreview();
});

// -- start ------------------------------------------------------------------------------------------

setUpSearch({
  input: /** @type {HTMLInputElement} */ ($("search")),
  results: $("search-results"),
  error: showError,
  open: async (result) => {
    if (result.agentSlug !== slug) {
      const jump = new URLSearchParams({ session: result.sessionId, ...(result.messageId ? { message: result.messageId } : {}) });
      location.href = `/chat/${encodeURIComponent(result.agentSlug)}?${jump}`;
      return;
    }
    await openSession(result.sessionId, { reattach: false });
    if (result.messageId) jumpTo(ui.messages, result.messageId);
    reattach(result.sessionId);
  },
});

async function start() {
  watchAgentPicker();
  await loadModels();
  await loadLimits();
  const jump = new URLSearchParams(location.search); // a search hit in another agent's chat
  if (jump.get("session")) stored.set(keys.session(), jump.get("session"));
  if (location.search) history.replaceState(null, "", location.pathname);
  const value = token();
  if (value) await signedIn(value);
  else {
    signedOut();
    newChat();
  }
  const message = jump.get("message");
  if (message) jumpTo(ui.messages, message);
  document.body.dataset.ready = "true";
}

start();
