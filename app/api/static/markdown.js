// @ts-check
/** Answers as Markdown: marked turns the text into HTML, DOMPurify removes anything that could run
 * (scripts, event handlers, `javascript:` links) before the page inserts it. Both are vendored. */
import { marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.js";

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  // Links in answers open elsewhere and do not hand this page to the target.
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** @param {string} text @returns {string} HTML with nothing executable left in it */
export function markdownHtml(text) {
  return DOMPurify.sanitize(marked.parse(text, { async: false, gfm: true, breaks: true }), {
    FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
    FORBID_ATTR: ["style"],
  });
}

/**
 * Put ``text``, rendered, into ``target`` (its raw text kept in ``data-markdown`` for copying).
 * @param {HTMLElement} target
 * @param {string} text
 */
export function renderMarkdown(target, text) {
  target.classList.add("markdown");
  target.dataset.markdown = text;
  target.innerHTML = markdownHtml(text);
}
