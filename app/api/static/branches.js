// @ts-check
/**
 * The versions of a message on the chat page: a `< 2/3 >` switcher on every edited or regenerated
 * message. Choosing a version asks Iris to show (and continue) the newest line through it
 * (`POST …/sessions/{id}/active`); the page then re-reads the history. Keyboard: the arrow keys move
 * between versions while the switcher has focus.
 */
import { json } from "./api.js";

/** @typedef {import("./api.js").ChatMessage} ChatMessage */

/**
 * Show another version of a message: the session's active line becomes the newest line through it.
 * @param {string} base `/api/agents/{slug}`
 * @param {string} sessionId
 * @param {string} messageId
 */
export function showVersion(base, sessionId, messageId) {
  return json(`${base}/sessions/${encodeURIComponent(sessionId)}/active`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ messageId }),
  });
}

/**
 * The switcher of a message with more than one version, or `null` for a message with only one.
 * @param {ChatMessage} message
 * @param {(versionId: string) => void} choose called with the version to show
 * @returns {HTMLElement | null}
 */
export function versionSwitcher(message, choose) {
  const versions = message.siblings || [message.id];
  const index = message.siblingIndex ?? versions.indexOf(message.id);
  if (versions.length < 2 || index < 0) return null;
  const group = document.createElement("div");
  group.className = "versions";
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", `Version ${index + 1} of ${versions.length}`);
  /** @param {number} step @param {string} label @param {string} glyph */
  const button = (step, label, glyph) => {
    const target = versions[index + step];
    const node = document.createElement("button");
    node.type = "button";
    node.textContent = glyph;
    node.setAttribute("aria-label", label);
    node.disabled = target === undefined;
    node.addEventListener("click", () => {
      if (target !== undefined) choose(target);
    });
    return node;
  };
  const previous = button(-1, "Previous version", "‹");
  const next = button(1, "Next version", "›");
  const position = document.createElement("span");
  position.className = "position";
  position.textContent = `${index + 1}/${versions.length}`;
  group.append(previous, position, next);
  group.addEventListener("keydown", (event) => {
    const step = event.key === "ArrowLeft" ? -1 : event.key === "ArrowRight" ? 1 : 0;
    const target = versions[index + step];
    if (!step || target === undefined) return;
    event.preventDefault();
    choose(target);
  });
  return group;
}

/**
 * After a switch, put the keyboard back on the switcher of the message now shown in its place.
 * @param {HTMLElement} list the message list
 * @param {string} messageId the version now shown
 * @param {"Previous version" | "Next version"} direction the button to focus (or its partner at the end)
 */
export function refocusSwitcher(list, messageId, direction) {
  const item = list.querySelector(`[data-message-id="${CSS.escape(messageId)}"]`);
  if (!item) return;
  const buttons = /** @type {HTMLButtonElement[]} */ (Array.from(item.querySelectorAll(".versions button")));
  const wanted = buttons.find((b) => b.getAttribute("aria-label") === direction && !b.disabled);
  const fallback = buttons.find((b) => !b.disabled);
  (wanted || fallback)?.focus();
}
