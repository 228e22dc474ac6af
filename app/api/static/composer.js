// @ts-check
/** The composer: the message box, attachments picked, pasted or dropped (checked before upload), edit and regenerate. */
import { ApiError, token, upload, uuid4 } from "./api.js";
import { copyText } from "./markdown.js";
import { loadSessions, newChat, refresh } from "./chats.js";
import { clearError, retryText, showError } from "./feedback.js";
import { questionOpen } from "./questions.js";
import { run, runningHere } from "./runs.js";
import { $, NOUN, counted, el, kindOf, limits, megabytes, perMessage, reads, state, ui, visionOn } from "./page.js";
import { audioChip, documentChip, mediaOf, renderHistory, resendable, scrollDown } from "./transcript.js";

/** @typedef {import("./api.js").ChatMessage} ChatMessage */
/** @typedef {import("./api.js").ChatPart} ChatPart */
/** @typedef {"image" | "document" | "audio"} Kind */
/** @typedef {{pages?: number | null, thumbnailUrl?: string | null, durationSeconds?: number | null}} Facts What an upload answer (or history) says about a file, shown on its chip. */
/** @typedef {{key: string, name: string, kind: Kind, status: "uploading" | "ready" | "failed", progress: number, part?: ChatPart, facts?: Facts, error?: string, uploadId?: string}} Attachment */

// -- composer ---------------------------------------------------------------------------------------

export function liveAttachments() {
  return state.attachments.filter((a) => a.status !== "failed");
}

/** @param {Kind} kind */
export function countOf(kind) {
  return liveAttachments().filter((a) => a.kind === kind).length;
}

export function renderAttachments() {
  const kinds = /** @type {Kind[]} */ (["image", "document", "audio"]).filter((k) => reads(k));
  const full = kinds.length > 0 && kinds.every((k) => countOf(k) >= perMessage(k));
  const fullText = `At most ${kinds.map((k) => counted(perMessage(k), k)).join(", ")} per message.`;
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
      if (a.status === "ready" && a.uploadId) {
        // The upload's id, for tools that take one (delete_attachment): shown on hover, copied on click.
        const id = a.uploadId;
        const copy = /** @type {HTMLButtonElement} */ (el("button", { type: "button", class: "upload-id", title: `Upload id ${id}`, "aria-label": `Copy the upload id of ${a.name}` }, ["Copy id"]));
        copy.addEventListener("click", () => copyText(copy, id));
        item.append(copy);
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
export function refusal(file, kind, how) {
  const name = file.name || `the ${how} file`;
  if (!reads(kind)) return `${name} was not added: this model does not read ${NOUN[kind]}.`;
  if (countOf(kind) >= perMessage(kind)) return `At most ${counted(perMessage(kind), kind)} per message: ${name} was not added.`;
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
export function addFiles(files, how) {
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
        attachment.uploadId = answer.id;
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

/** The message box grows with its text (up to a limit, then it scrolls). */
export function grow() {
  ui.text.style.height = "auto";
  ui.text.style.height = `${ui.text.scrollHeight + 2}px`;
}
ui.text.addEventListener("input", grow);

// Files dropped anywhere on the page land in the composer, not in a new browser tab.
document.addEventListener("dragover", (event) => {
  if (event.dataTransfer && Array.from(event.dataTransfer.types).includes("Files")) event.preventDefault();
});
document.addEventListener("drop", (event) => {
  if (!event.dataTransfer || !event.dataTransfer.files.length || ui.composer.contains(/** @type {Node} */ (event.target))) return;
  event.preventDefault();
  if (token()) addFiles(Array.from(event.dataTransfer.files), "dropped");
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

export function resetComposer() {
  state.attachments = [];
  state.editing = null;
  ui.editing.hidden = true;
  ui.text.value = "";
  grow();
  ui.attachHint.textContent = "";
  renderAttachments();
}

/** @param {ChatMessage} message */
export function startEdit(message) {
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
  grow();
  ui.text.focus();
}
$("cancel-edit").addEventListener("click", resetComposer);

/** Hide what an edit or a regeneration replaces (the server marks it superseded). @param {number} from */
export function dropFrom(from) {
  state.history = state.history.slice(0, from);
  renderHistory();
}

/** @param {ChatPart[]} parts @param {Attachment[]} attachments the parts' uploads, for their chips */
export function showSent(parts, attachments) {
  const media = mediaOf(parts, new Map(attachments.flatMap((a) => (a.part ? [[a.part, a.facts || {}]] : []))));
  const text = parts.map((p) => (p.type === "text" ? p.text : "")).join("");
  const item = el("li", { class: "msg user", "aria-label": "user message" });
  if (media.length) item.append(el("div", { class: "images" }, media));
  if (text) item.append(el("div", { class: "text" }, [text]));
  ui.messages.append(item);
  scrollDown();
}

/**
 * Attachments the chosen model cannot read are kept (switching back sends them), but said so; true
 * when there are some.
 */
export function attachmentsUnreadable() {
  const unreadable = liveAttachments().filter((a) => !reads(a.kind));
  if (!unreadable.length) return false;
  const kinds = Array.from(new Set(unreadable.map((a) => NOUN[a.kind])));
  ui.attachHint.textContent = `The current model does not support ${kinds.join(" or ")}: they are kept; choose a model that reads them, or remove them.`;
  return true;
}

ui.composer.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (runningHere()) return;
  if (!token()) {
    ui.error.textContent = "Sign in first: continue as a guest or paste a token.";
    return;
  }
  if (!ui.approval.hidden) {
    ui.error.textContent = "Answer the question above first: Approve or Deny.";
    /** @type {HTMLElement | null} */ (ui.approval.querySelector("button"))?.focus();
    return;
  }
  if (questionOpen()) {
    ui.error.textContent = "Answer the tool's question above first: Submit, Decline or Cancel.";
    return;
  }
  if (attachmentsUnreadable()) return;
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
  ui.greeting.hidden = true;
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

export async function regenerate() {
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
