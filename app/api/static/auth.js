// @ts-check
/** Signing in: as a guest or with a pasted token; signing out. */
import { clearAgents, loadAgents } from "./agents.js";
import { json, setToken } from "./api.js";
import { loadSessions, newChat, openSession } from "./chats.js";
import { clearError, showError } from "./feedback.js";
import { $, keys, slug, stored, ui } from "./page.js";

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

// -- sign-in ----------------------------------------------------------------------------------------

export function signedOut() {
  setToken(null);
  clearAgents();
  ui.signin.hidden = false;
  ui.account.hidden = true;
}

/** @param {string} value */
export async function signedIn(value) {
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
export function describeToken(value) {
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
