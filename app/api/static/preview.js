// @ts-check
/** The image preview: an image shown large in a dialog. */
import { $, ui } from "./page.js";

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

// -- image preview ----------------------------------------------------------------------------------

/** @param {string} url @param {string} name */
export function openPreview(url, name) {
  ui.previewImage.src = url;
  ui.previewImage.alt = name;
  ui.preview.hidden = false;
  $("preview-close").focus();
}

export function closePreview() {
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
