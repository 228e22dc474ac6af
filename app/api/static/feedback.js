// @ts-check
/** Errors as the page shows them: the API's problem detail and code, and when a refused request may be tried again. */
import { ApiError } from "./api.js";
import { signedOut } from "./auth.js";
import { ui } from "./page.js";

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

/** @param {unknown} error */
export function showError(error) {
  if (error instanceof ApiError) {
    ui.error.textContent = `${error.detail} (${error.code})${retryText(error)}`;
    if (error.status === 401) signedOut();
  } else {
    ui.error.textContent = String(error);
  }
}

/** " Try again in 30 s (at 14:02:10)." for a 429 that says when; "" otherwise. @param {ApiError} error */
export function retryText(error) {
  if (error.status !== 429) return "";
  if (error.retryAfter === null) return " Try again later.";
  const at = new Date(Date.now() + error.retryAfter * 1000).toLocaleTimeString();
  return ` Try again in ${Math.ceil(error.retryAfter)} s (at ${at}).`;
}

export function clearError() {
  ui.error.textContent = "";
}
