// @ts-check
/**
 * ``/`` commands in the composer: a ``/`` at the start of an empty message box lists the agent's MCP
 * prompts (``GET /api/agents/{slug}/prompts``, loaded on first use and kept per agent) as a listbox;
 * the one chosen asks for its arguments (a small inline form) when it has any, then starts the answer
 * with ``prompt: {name, arguments}``; the server records the prompt's messages as the user's. Esc closes.
 */
import { json } from "./api.js";
import { resetComposer, showSent } from "./composer.js";
import { showError } from "./feedback.js";
import { run, runningHere } from "./runs.js";
import { base, el, slug, ui } from "./page.js";

/** @typedef {{name: string, required?: boolean, description?: string | null}} PromptArgument */
/** @typedef {{name: string, server: string, title?: string | null, description?: string | null, arguments: PromptArgument[]}} Prompt */

/** The prompts of each agent, as loaded (or loading). @type {Map<string, Promise<Prompt[]>>} */
const cache = new Map();
const list = /** @type {HTMLUListElement} */ (el("ul", { id: "prompt-list", role: "listbox", "aria-label": "Prompts" }));
const form = /** @type {HTMLFormElement} */ (el("form", { id: "prompt-form", "aria-label": "Prompt arguments" }));
list.hidden = true;
form.hidden = true;
ui.composer.before(list, form);
/** @type {Prompt[]} */
let shown = [];
let active = 0;

/** The agent's prompts, loaded once. */
function prompts() {
  let loading = cache.get(slug);
  if (!loading) {
    loading = json(`${base}/prompts`).then((answer) => /** @type {Prompt[]} */ (answer.prompts || []));
    loading.catch(() => cache.delete(slug)); // a failure is tried again next time
    cache.set(slug, loading);
  }
  return loading;
}

/** Close the list (the message box keeps its text). */
function closeList() {
  list.hidden = true;
  list.replaceChildren();
  shown = [];
  ui.text.removeAttribute("aria-activedescendant");
}

/** Close the arguments form. */
function closeForm() {
  form.hidden = true;
  form.replaceChildren();
}

/** Mark the option at ``index`` as the one Enter chooses. @param {number} index */
function highlight(index) {
  active = (index + shown.length) % shown.length;
  list.querySelectorAll("[role=option]").forEach((node, i) => node.setAttribute("aria-selected", String(i === active)));
  ui.text.setAttribute("aria-activedescendant", `prompt-option-${active}`);
}

/** List the prompts that match what follows the ``/``. */
async function openList() {
  const query = ui.text.value.slice(1).toLowerCase();
  let all;
  try {
    all = await prompts();
  } catch (error) {
    showError(error);
    return;
  }
  if (!ui.text.value.startsWith("/")) return; // typed on while loading
  shown = all.filter((p) => p.name.toLowerCase().includes(query) || (p.title || "").toLowerCase().includes(query));
  if (!shown.length) {
    list.replaceChildren(el("li", { class: "note" }, [all.length ? "No prompt matches." : "This agent has no prompts."]));
    list.hidden = false;
    return;
  }
  list.replaceChildren(
    ...shown.map((p, i) => {
      const option = el("li", { role: "option", id: `prompt-option-${i}`, "aria-selected": "false" }, [
        el("span", { class: "prompt-name" }, [`/${p.name}`]),
        ...(p.title || p.description ? [el("span", { class: "note" }, [` ${p.title || ""}${p.title && p.description ? " — " : ""}${p.description || ""}`])] : []),
      ]);
      option.addEventListener("mousedown", (event) => event.preventDefault()); // keep focus in the box
      option.addEventListener("click", () => choose(p));
      return option;
    }),
  );
  list.hidden = false;
  highlight(0);
}

/** Send the chosen prompt. @param {Prompt} prompt @param {Record<string, string>} args */
async function send(prompt, args) {
  closeForm();
  resetComposer();
  ui.greeting.hidden = true;
  showSent([{ type: "text", text: `/${prompt.name}` }], []);
  await run({ prompt: { name: prompt.name, arguments: args } });
}

/** A prompt chosen: ask for its arguments first, if it takes any. @param {Prompt} prompt */
function choose(prompt) {
  closeList();
  if (runningHere()) return;
  if (!prompt.arguments.length) {
    send(prompt, {});
    return;
  }
  form.replaceChildren(el("p", {}, [`/${prompt.name}`]));
  prompt.arguments.forEach((arg, i) => {
    const id = `prompt-arg-${i}`;
    const input = /** @type {HTMLInputElement} */ (el("input", { id, name: arg.name, type: "text" }));
    input.required = Boolean(arg.required);
    const label = el("label", { for: id }, [arg.name, arg.required ? " (required)" : ""]);
    form.append(el("div", { class: "question-field" }, [label, input, ...(arg.description ? [el("span", { class: "note" }, [arg.description])] : [])]));
  });
  const cancel = el("button", { type: "button" }, ["Cancel"]);
  cancel.addEventListener("click", () => {
    closeForm();
    ui.text.focus();
  });
  form.append(el("div", { class: "question-buttons" }, [el("button", { type: "submit" }, ["Send prompt"]), cancel]));
  form.onsubmit = (event) => {
    event.preventDefault();
    /** @type {Record<string, string>} */
    const args = {};
    for (const arg of prompt.arguments) {
      const value = /** @type {HTMLInputElement} */ (form.elements.namedItem(arg.name)).value;
      if (value) args[arg.name] = value;
    }
    send(prompt, args);
  };
  form.hidden = false;
  /** @type {HTMLInputElement | null} */ (form.querySelector("input"))?.focus();
}

ui.text.setAttribute("aria-autocomplete", "list");
ui.text.setAttribute("aria-controls", "prompt-list");
ui.text.addEventListener("input", () => {
  if (ui.text.value.startsWith("/") && !ui.text.value.includes("\n") && !typingMessage()) openList();
  else if (!list.hidden) closeList();
});

/** Attachments or an edit make a message, not a command. */
function typingMessage() {
  return ui.attachments.childElementCount > 0 || !ui.editing.hidden;
}

// Captured on the form, before the message box's own Enter (send) and Esc (leave an edit).
ui.composer.addEventListener(
  "keydown",
  (event) => {
    if (event.target !== ui.text || list.hidden) return;
    if (event.key === "Escape") closeList();
    else if (event.key === "ArrowDown" && shown.length) highlight(active + 1);
    else if (event.key === "ArrowUp" && shown.length) highlight(active - 1);
    else if ((event.key === "Enter" || event.key === "Tab") && shown.length && !event.shiftKey) choose(shown[active]);
    else return;
    event.preventDefault();
    event.stopPropagation();
  },
  true,
);
form.addEventListener("keydown", (event) => {
  if (event.key === "Escape") {
    closeForm();
    ui.text.focus();
  }
});
