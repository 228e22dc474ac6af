// @ts-check
/**
 * Search over the caller's conversations, above the sessions list: results appear as you type
 * (`GET /api/sessions/search`), a chat once with its agent (and date, when the list knows it) and its
 * matching messages under it, each with its highlighted snippet; choosing one opens its session and
 * jumps to the message. Keyboard: ArrowDown from the box into the results, ArrowUp/ArrowDown between
 * them, Enter opens, Esc clears the search.
 */
import { ApiError, json } from "./api.js";

/** @typedef {{sessionId: string, agentSlug: string, title?: string, messageId?: string, snippet: string}} SearchResult */

const DELAY_MS = 200;

/**
 * The snippet (HTML from Iris: escaped text, matches in `<mark>`) as DOM nodes, keeping only text and
 * `<mark>`: whatever the snippet held, nothing else reaches the page.
 * @param {string} snippet
 * @returns {Node[]}
 */
export function snippetNodes(snippet) {
  const parsed = new DOMParser().parseFromString(`<body>${snippet}</body>`, "text/html");
  return Array.from(parsed.body.childNodes, (node) => {
    if (node.nodeName === "MARK") {
      const mark = document.createElement("mark");
      mark.textContent = node.textContent;
      return mark;
    }
    return document.createTextNode(node.textContent || "");
  });
}

/**
 * The hits of each chat together (a chat is listed once), in the order of each chat's best hit.
 * @param {SearchResult[]} found
 * @returns {SearchResult[][]}
 */
export function grouped(found) {
  /** @type {Map<string, SearchResult[]>} */
  const groups = new Map();
  for (const hit of found) groups.set(hit.sessionId, [...(groups.get(hit.sessionId) || []), hit]);
  return Array.from(groups.values());
}

/**
 * Scroll a message of the open session into view and mark it for a moment; `false` when it is not
 * on the page (a turn the page does not draw, for example).
 * @param {HTMLElement} list the message list
 * @param {string} messageId
 */
export function jumpTo(list, messageId) {
  const item = /** @type {HTMLElement | null} */ (list.querySelector(`[data-message-id="${CSS.escape(messageId)}"]`));
  if (!item) return false;
  item.scrollIntoView({ block: "center" });
  item.classList.add("found");
  item.setAttribute("tabindex", "-1");
  item.focus({ preventScroll: true });
  setTimeout(() => item.classList.remove("found"), 2000);
  return true;
}

/**
 * Wire the search box to its results list.
 * @param {{input: HTMLInputElement, results: HTMLElement, open: (result: SearchResult) => void, error: (e: unknown) => void, dateOf?: (sessionId: string) => string}} parts
 */
export function setUpSearch({ input, results, open, error, dateOf }) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let asked = 0;

  const buttons = () => /** @type {HTMLButtonElement[]} */ (Array.from(results.querySelectorAll("button")));

  function clear() {
    input.value = "";
    results.replaceChildren();
    results.hidden = true;
  }

  /** @param {SearchResult[]} found @param {string} query */
  function show(found, query) {
    results.hidden = false;
    if (!found.length) {
      results.replaceChildren(Object.assign(document.createElement("li"), { className: "none", textContent: `Nothing found for “${query}”.` }));
      return;
    }
    results.replaceChildren(...grouped(found).map((group) => groupItem(group)));
  }

  /** @param {SearchResult} result @param {HTMLElement[]} children */
  function resultButton(result, children) {
    const button = document.createElement("button");
    button.type = "button";
    button.append(...children);
    button.addEventListener("click", () => {
      clear();
      open(result);
    });
    return button;
  }

  /** One chat: its title (agent, date), then each matching message under it. @param {SearchResult[]} hits */
  function groupItem(hits) {
    const first = hits[0];
    const titleHit = hits.find((h) => !h.messageId);
    const facts = [first.agentSlug, dateOf ? dateOf(first.sessionId) : ""].filter(Boolean).join(" · ");
    const head = [
      Object.assign(document.createElement("span"), { className: "title", textContent: first.title || "Untitled chat" }),
      Object.assign(document.createElement("span"), { className: "facts", textContent: facts }),
    ];
    if (titleHit) {
      const snippet = Object.assign(document.createElement("span"), { className: "snippet" });
      snippet.append(...snippetNodes(titleHit.snippet));
      head.push(snippet);
    }
    const item = document.createElement("li");
    item.className = "group";
    item.append(resultButton(titleHit || { ...first, messageId: undefined }, head));
    const messages = hits.filter((h) => h.messageId);
    if (messages.length) {
      const list = document.createElement("ul");
      list.setAttribute("aria-label", `Matches in ${first.title || "Untitled chat"}`);
      for (const hit of messages) {
        const snippet = Object.assign(document.createElement("span"), { className: "snippet" });
        snippet.append(...snippetNodes(hit.snippet));
        const row = document.createElement("li");
        row.append(resultButton(hit, [snippet]));
        list.append(row);
      }
      item.append(list);
    }
    return item;
  }

  async function run() {
    const query = input.value.trim();
    const mine = ++asked;
    if (!query) {
      results.replaceChildren();
      results.hidden = true;
      return;
    }
    try {
      const answer = await json(`/api/sessions/search?q=${encodeURIComponent(query)}`);
      if (mine === asked) show(answer.results, query);
    } catch (e) {
      if (mine === asked && !(e instanceof ApiError && e.status === 0)) error(e);
    }
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, DELAY_MS);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      clear();
    } else if (event.key === "ArrowDown" && buttons().length) {
      event.preventDefault();
      buttons()[0].focus();
    } else if (event.key === "Enter") {
      event.preventDefault();
      clearTimeout(timer);
      run();
    }
  });
  results.addEventListener("keydown", (event) => {
    const all = buttons();
    const at = all.indexOf(/** @type {HTMLButtonElement} */ (document.activeElement));
    if (event.key === "Escape") {
      event.preventDefault();
      clear();
      input.focus();
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = at + (event.key === "ArrowDown" ? 1 : -1);
      if (next < 0) input.focus();
      else all[Math.min(next, all.length - 1)].focus();
    }
  });
}
