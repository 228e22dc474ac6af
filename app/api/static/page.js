// @ts-check
/** Shared by the chat page's modules: the agent it chats with, its elements, its state, what it stores in the browser, and what the chosen model reads. */

/** @typedef {import("./api.js").AgUiEvent} AgUiEvent */
/** @typedef {import("./api.js").AgentModel} AgentModel */
/** @typedef {import("./api.js").ChatMessage} ChatMessage */
/** @typedef {import("./api.js").ChatPart} ChatPart */
/** @typedef {import("./api.js").SessionOut} SessionOut */
/** @typedef {import("./api.js").UploadLimits} UploadLimits */
/** @typedef {import("./api.js").UploadOut} UploadOut */
/** @typedef {"image" | "document" | "audio"} Kind */
/** @typedef {import("./tools.js").ToolView} ToolView */
/** @typedef {{tool?: ToolView, stopped?: boolean}} Extras What the page remembers of a message beyond its history: the tool call it showed live, whether the user stopped it. */
/** @typedef {{pages?: number | null, thumbnailUrl?: string | null, durationSeconds?: number | null}} Facts What an upload answer (or history) says about a file, shown on its chip. */
/** @typedef {{key: string, name: string, kind: Kind, status: "uploading" | "ready" | "failed", progress: number, part?: ChatPart, facts?: Facts, error?: string, uploadId?: string}} Attachment */
/** @typedef {{runId: string | null, lastEventId: string | null, events: AgUiEvent[]}} RunLog */

/** What the server takes (``GET /agent/capabilities``, ``custom["iris/uploadLimits"]``); these stand in
 * only until it answers. @type {UploadLimits} */
export const limits = {
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
export const NOUN = { image: "images", document: "PDFs", audio: "audio files" };
const ONE = { image: "image", document: "PDF", audio: "audio file" };

/** "1 audio file", "4 images". @param {number} count @param {"image" | "document" | "audio"} kind */
export function counted(count, kind) {
  return `${count} ${count === 1 ? ONE[kind] : NOUN[kind]}`;
}
export const slugMatch = location.pathname.match(/^\/chat\/([^/]+)/);
export const slug = decodeURIComponent(slugMatch ? slugMatch[1] : "default");
export const base = `/api/agents/${encodeURIComponent(slug)}`;

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
export function $(id) {
  const element = document.getElementById(id);
  if (!element) throw new Error(`#${id} is missing`);
  return /** @type {T} */ (element);
}

export const ui = {
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
  greeting: $("greeting"),
  announcer: $("announcer"),
};

export const state = {
  /** @type {AgentModel[]} */ models: [],
  /** @type {string | null} */ sessionId: null,
  /** @type {ChatMessage[]} */ history: [],
  /** @type {Attachment[]} */ attachments: [],
  /** @type {string | null} */ editing: null,
  /** @type {string | null} */ title: null,
};

// -- small helpers ----------------------------------------------------------------------------------

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children);
  return node;
}


/** What the page keeps in the browser (``localStorage``: every tab of this site shares it, and it
 * outlives a restart): the chat last open, run logs to re-attach with, open approvals, extras. */
export const stored = {
  /** @param {string} key */
  get(key) {
    const raw = localStorage.getItem(key);
    try {
      return raw ? JSON.parse(raw) : null;
    } catch {
      return null;
    }
  },
  /** @param {string} key @param {unknown} value */
  set(key, value) {
    try {
      if (value === null) localStorage.removeItem(key);
      else localStorage.setItem(key, JSON.stringify(value));
    } catch {
      // Storage full or refused: the page still works, it only forgets sooner.
    }
  },
};
export const keys = {
  session: () => `iris.session.${slug}`,
  /** @param {string} id */ extras: (id) => `iris.extras.${id}`,
  /** @param {string} id */ log: (id) => `iris.run.${id}`,
  /** @param {string} id */ interrupt: (id) => `iris.interrupt.${id}`,
};

/** @param {string} sessionId @returns {Record<string, Extras>} */
export function extrasOf(sessionId) {
  return stored.get(keys.extras(sessionId)) || {};
}

/** @param {string} sessionId @param {string} messageId @param {Extras} extra */
export function addExtras(sessionId, messageId, extra) {
  const all = extrasOf(sessionId);
  all[messageId] = { ...all[messageId], ...extra };
  stored.set(keys.extras(sessionId), all);
}

/** @param {any[] | undefined} usage */
export function usageText(usage) {
  if (!usage || !usage.length) return null;
  return usage
    .map((u) => {
      const counts = [u.inputTokens != null ? `${u.inputTokens} in` : null, u.outputTokens != null ? `${u.outputTokens} out` : null];
      return [u.provider && u.model ? `${u.provider}/${u.model}` : null, ...counts].filter(Boolean).join(" · ");
    })
    .join("; ");
}

export function currentModel() {
  return state.models.find((m) => m.id === ui.model.value) || null;
}

/** Whether the chosen model reads ``kind`` (from its ``pdf`` and ``audio``, or, on a server without them, its type). @param {Kind} kind */
export function reads(kind) {
  const model = currentModel();
  if (!model) return kind === "image";
  if (kind === "document" && model.pdf !== undefined) return model.pdf;
  if (kind === "audio" && model.audio !== undefined) return model.audio.length > 0;
  return kind === "image" ? model.type !== "text" : model.type === "multimodal";
}

export function visionOn() {
  return reads("image") || reads("document") || reads("audio");
}

/** The most ``kind`` files one message may carry. @param {Kind} kind */
export function perMessage(kind) {
  if (kind === "image") return limits.maxImagesPerMessage;
  return kind === "document" ? limits.maxDocumentsPerMessage : limits.maxAudioPerMessage;
}

/** What the browser says a file is: only a hint for friendly refusals (the server sniffs the bytes). @param {File} file @returns {Kind} */
export function kindOf(file) {
  const name = (file.name || "").toLowerCase();
  if (file.type === "application/pdf" || name.endsWith(".pdf")) return "document";
  if (file.type.startsWith("audio/") || name.endsWith(".wav") || name.endsWith(".mp3")) return "audio";
  return "image";
}

/** @param {number} bytes */
export function megabytes(bytes) {
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
}

/** A clip's length as the file has it: tenths of a second under a minute (a 1.5 s clip is neither
 * "0:01" nor "0:02"), else minutes and whole seconds, cut as a player's clock cuts them.
 * @param {number} seconds */
export function duration(seconds) {
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const whole = Math.floor(seconds);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}
