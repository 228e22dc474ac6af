// @ts-check
/** Answers as Markdown: marked turns the text into HTML, DOMPurify removes anything that could run
 * (scripts, event handlers, `javascript:` links) before the page inserts it. Finished answers get their
 * code blocks highlighted (highlight.js), with the language and a copy button above each. All three
 * are vendored. */
import hljs from "./vendor/highlight.min.js";
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
 * Put ``text``, rendered, into ``target`` (its raw text kept in ``data-markdown`` for copying). The HTML
 * is parsed in an inert template and images already shown are kept as they are, so an answer's image is
 * fetched once however many tokens follow it.
 * @param {HTMLElement} target
 * @param {string} text
 */
export function renderMarkdown(target, text) {
  target.classList.add("markdown");
  target.dataset.markdown = text;
  const template = document.createElement("template");
  template.innerHTML = markdownHtml(text);
  /** @type {Map<string, HTMLImageElement[]>} */
  const shown = new Map();
  for (const img of target.querySelectorAll("img")) {
    const src = img.getAttribute("src") || "";
    shown.set(src, [...(shown.get(src) || []), img]);
  }
  for (const img of template.content.querySelectorAll("img")) {
    const kept = (shown.get(img.getAttribute("src") || "") || []).shift();
    if (kept) img.replaceWith(kept);
  }
  target.replaceChildren(template.content);
}

/**
 * Copy text, and say so on the button for a moment.
 * @param {HTMLButtonElement} button @param {string} text
 */
export async function copyText(button, text) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => (button.textContent = label), 1500);
}

/** The language a fenced block names (```python), if highlight.js knows it. @param {HTMLElement} code */
function languageOf(code) {
  const named = Array.from(code.classList).find((c) => c.startsWith("language-"));
  const language = named ? named.slice("language-".length) : "";
  return language && hljs.getLanguage(language) ? language : null;
}

/**
 * A finished answer's code blocks: highlighted, with the language named and a copy button.
 * @param {HTMLElement} target rendered by ``renderMarkdown``
 */
export function decorateCode(target) {
  for (const pre of target.querySelectorAll("pre")) {
    const code = /** @type {HTMLElement | null} */ (pre.querySelector("code"));
    if (!code || pre.parentElement?.classList.contains("code-block")) continue;
    const source = code.textContent || "";
    const language = languageOf(code);
    if (language) {
      code.innerHTML = hljs.highlight(source, { language, ignoreIllegals: true }).value; // escaped by highlight.js
      code.classList.add("hljs");
    }
    const copy = document.createElement("button");
    copy.type = "button";
    copy.textContent = "Copy code";
    copy.addEventListener("click", () => copyText(copy, source));
    const name = document.createElement("span");
    name.textContent = language || "code";
    const head = document.createElement("div");
    head.className = "code-head";
    head.append(name, copy);
    const block = document.createElement("div");
    block.className = "code-block";
    pre.replaceWith(block);
    block.append(head, pre);
  }
}
