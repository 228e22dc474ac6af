// @ts-check
/** The agent's models and upload limits, and the chats (sessions) list: opening, starting and re-reading a chat. */
import { ApiError, json, uuid4 } from "./api.js";
import { attachmentsUnreadable, renderAttachments, resetComposer } from "./composer.js";
import { clearError, showError } from "./feedback.js";
import { reattach, showInterrupt } from "./runs.js";
import { $, base, currentModel, el, keys, limits, reads, slug, state, stored, ui, visionOn } from "./page.js";
import { SessionList } from "./sessions.js";
import { renderHistory } from "./transcript.js";

/** @typedef {"image" | "document" | "audio"} Kind */

export async function loadLimits() {
  try {
    const answer = await json("/agent/capabilities");
    const found = answer.custom && answer.custom["iris/uploadLimits"];
    if (found) Object.assign(limits, found);
  } catch {
    // The stand-ins above hold until the server answers; uploads are checked there anyway.
  }
  modelChanged();
}

// -- models -----------------------------------------------------------------------------------------

/** The agent's default model: a new chat starts on it. */
let defaultModelId = "";

/** Show a chat's model in the picker (the session's own when the agent still offers it). @param {string | null | undefined} modelId */
function pickModel(modelId) {
  const offered = state.models.some((m) => m.id === modelId);
  ui.model.value = offered && modelId ? modelId : defaultModelId;
  modelChanged();
}

/** The chat's model is stored with its session (every device reopening it sees it), once it has one. */
async function rememberModel() {
  if (!state.sessionId || !state.history.length || !ui.model.value) return;
  try {
    await json(`${base}/sessions/${encodeURIComponent(state.sessionId)}`, {
      method: "PATCH",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ modelId: ui.model.value }),
    });
  } catch (error) {
    showError(error);
  }
}

/** The tab says which chat it shows. */
function showTitle() {
  document.title = `${state.title || "New chat"} · Iris`;
}

export async function loadModels() {
  try {
    const answer = await json(`${base}/models`);
    state.models = answer.models;
    ui.model.replaceChildren(
      ...state.models.map((m) => el("option", { value: m.id }, [`${m.name} (${m.type})`])),
    );
    defaultModelId = answer.defaultModelId || (state.models[0] ? state.models[0].id : "");
    ui.model.value = defaultModelId;
    $("agent-name").textContent = slug;
  } catch (error) {
    showError(error);
  }
  modelChanged();
}

export function modelChanged() {
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
ui.model.addEventListener("change", () => {
  modelChanged();
  attachmentsUnreadable();
  rememberModel();
});

// -- sessions ---------------------------------------------------------------------------------------

export const sessionList = new SessionList({
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

export async function loadSessions() {
  await sessionList.load();
}

export function newChat() {
  state.sessionId = uuid4(); // uploads need a thread before the first message; the chat creates it
  state.history = [];
  state.title = null;
  stored.set(keys.session(), null);
  resetComposer();
  showInterrupt(null);
  if (state.models.length) pickModel(null);
  renderHistory();
  showTitle();
  sessionList.render();
}

/**
 * @param {string} id
 * @param {{reattach: boolean}} options
 */
export async function openSession(id, options) {
  clearError();
  state.sessionId = id;
  resetComposer();
  try {
    const answer = await json(`${base}/sessions/${id}/messages`);
    state.history = answer.messages;
    state.title = answer.title || null;
    pickModel(answer.modelId);
  } catch (error) {
    if (error instanceof ApiError && error.code === "thread_not_found") {
      newChat();
      return;
    }
    showError(error);
    return;
  }
  stored.set(keys.session(), id);
  showTitle();
  renderHistory();
  showInterrupt(stored.get(keys.interrupt(id)));
  await loadSessions();
  if (options.reattach) await reattach(id);
}

export async function refresh() {
  if (!state.sessionId) return;
  try {
    const answer = await json(`${base}/sessions/${state.sessionId}/messages`);
    state.history = answer.messages;
    state.title = answer.title || null;
    stored.set(keys.session(), state.sessionId);
    showTitle();
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "thread_not_found")) showError(error);
  }
  renderHistory();
  await loadSessions();
}
