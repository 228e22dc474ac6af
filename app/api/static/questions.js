// @ts-check
/**
 * Questions an MCP tool asks the user mid-call (an ``input_required`` interrupt): a form built from the
 * server's flat JSON Schema (``responseSchema``), or a page to visit (``metadata["iris/elicitation"].url``);
 * and a server's sign-in (``authorization_required``: ``metadata["iris/authorization"].url``).
 * The answer goes back through resume: ``resolved`` with ``{content}`` accepts, ``resolved`` with
 * ``{action: "decline"}`` declines, ``cancelled`` cancels. runs.js shows and answers the interrupt.
 */
import { $, el } from "./page.js";

/** @typedef {{type?: string, title?: string, description?: string, format?: string, minimum?: number, maximum?: number, minLength?: number, maxLength?: number, default?: unknown, enum?: unknown[], enumNames?: string[], oneOf?: {const: unknown, title?: string}[]}} Field */
/** @typedef {{properties?: Record<string, Field>, required?: string[]}} FormSchema */
/** @typedef {{id: string, reason?: string, message?: string, responseSchema?: FormSchema | null, metadata?: Record<string, any>}} Interrupt */
/** @typedef {(status: "resolved" | "cancelled", payload?: Record<string, unknown>) => void} Reply */

const section = $("question");
const INPUT_TYPES = /** @type {Record<string, string>} */ ({ email: "email", uri: "url", date: "date", "date-time": "datetime-local" });

/** Whether a question waits for its answer on the page. */
export function questionOpen() {
  return !section.hidden;
}

/** Hide the question (answered, or another chat shown). */
export function hideQuestion() {
  section.hidden = true;
  section.replaceChildren();
}

/** @param {string} label @param {() => void} onClick @param {string} [type] */
function button(label, onClick, type = "button") {
  const node = /** @type {HTMLButtonElement} */ (el("button", { type }, [label]));
  if (type === "button") node.addEventListener("click", onClick);
  return node;
}

/** The choices of an ``enum`` or ``oneOf`` field, as [value, label]; null when it has none. @param {Field} field @returns {[unknown, string][] | null} */
function choices(field) {
  if (Array.isArray(field.oneOf)) return field.oneOf.map((c) => /** @type {[unknown, string]} */ ([c.const, c.title || String(c.const)]));
  if (Array.isArray(field.enum)) return field.enum.map((v, i) => /** @type {[unknown, string]} */ ([v, (field.enumNames && field.enumNames[i]) || String(v)]));
  return null;
}

/** One field's control. @param {string} name @param {Field} field @param {boolean} required @param {string} id */
function control(name, field, required, id) {
  const options = choices(field);
  if (options) {
    const select = /** @type {HTMLSelectElement} */ (el("select", { id, name }));
    if (!required || field.default === undefined) select.append(el("option", { value: "" }, ["—"]));
    options.forEach(([value, label], index) => {
      const option = /** @type {HTMLOptionElement} */ (el("option", { value: String(index) }, [label]));
      option.selected = value === field.default;
      select.append(option);
    });
    select.required = required;
    return select;
  }
  const input = /** @type {HTMLInputElement} */ (el("input", { id, name }));
  if (field.type === "boolean") {
    input.type = "checkbox";
    input.checked = field.default === true;
    return input;
  }
  const numeric = field.type === "number" || field.type === "integer";
  input.type = numeric ? "number" : INPUT_TYPES[field.format || ""] || "text";
  if (numeric) {
    input.step = field.type === "integer" ? "1" : "any";
    if (field.minimum !== undefined) input.min = String(field.minimum);
    if (field.maximum !== undefined) input.max = String(field.maximum);
  }
  if (field.minLength !== undefined) input.minLength = field.minLength;
  if (field.maxLength !== undefined) input.maxLength = field.maxLength;
  if (field.default !== undefined && field.default !== null) input.value = String(field.default);
  input.required = required;
  return input;
}

/** The form's content as the schema's kinds; fields left empty (and not required) are left out. @param {HTMLFormElement} form @param {FormSchema} schema */
function content(form, schema) {
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [name, field] of Object.entries(schema.properties || {})) {
    const node = /** @type {HTMLInputElement | HTMLSelectElement} */ (form.elements.namedItem(name));
    if (!node) continue;
    const options = choices(field);
    if (options) {
      if (node.value !== "") out[name] = options[Number(node.value)][0];
    } else if (field.type === "boolean") {
      out[name] = /** @type {HTMLInputElement} */ (node).checked;
    } else if (node.value !== "") {
      out[name] = field.type === "number" || field.type === "integer" ? Number(node.value) : node.value;
    }
  }
  return out;
}

/** A form question. @param {Interrupt} interrupt @param {Reply} reply */
function formQuestion(interrupt, reply) {
  const schema = interrupt.responseSchema || {};
  const required = new Set(schema.required || []);
  const form = /** @type {HTMLFormElement} */ (el("form", { class: "question-form" }));
  for (const [name, field] of Object.entries(schema.properties || {})) {
    const id = `question-${name}`;
    const input = control(name, field, required.has(name), id);
    const label = el("label", { for: id }, [field.title || name, required.has(name) ? " (required)" : ""]);
    const row = el("div", { class: field.type === "boolean" ? "question-field check" : "question-field" });
    row.append(...(field.type === "boolean" ? [input, label] : [label, input]));
    if (field.description) {
      row.append(el("span", { class: "note", id: `${id}-note` }, [field.description]));
      input.setAttribute("aria-describedby", `${id}-note`);
    }
    form.append(row);
  }
  const buttons = el("div", { class: "question-buttons" }, [
    button("Submit", () => {}, "submit"),
    button("Decline", () => reply("resolved", { action: "decline" })),
    button("Cancel", () => reply("cancelled")),
  ]);
  form.append(buttons);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (form.reportValidity()) reply("resolved", { content: content(form, schema) });
  });
  return form;
}

/** A page to visit (or an MCP server to sign in to), then Done. @param {string} url @param {Reply} reply @param {string} [label] */
function urlQuestion(url, reply, label) {
  const link = el("a", { href: url, target: "_blank", rel: "noopener noreferrer", class: "question-link" }, [label || `Open ${url}`]);
  return el("div", { class: "question-buttons" }, [
    link,
    button("Done", () => reply("resolved")),
    button("Cancel", () => reply("cancelled")),
  ]);
}

/** Show a tool's question, answered through ``reply``; focus goes to its first field (or its link). @param {Interrupt} interrupt @param {Reply} reply */
export function showQuestion(interrupt, reply) {
  const meta = interrupt.metadata || {};
  const details = meta["iris/elicitation"] || meta["iris/authorization"] || {};
  const signIn = details.mode === "authorize" ? `Sign in to ${details.server || "the server"}` : undefined;
  const tool = interrupt.metadata && interrupt.metadata["iris/toolCall"] ? interrupt.metadata["iris/toolCall"].name : null;
  const heading = tool ? `${tool} asks` : "A tool asks";
  section.replaceChildren(
    el("p", { class: "question-from" }, [details.server ? `${heading} (server ${details.server}):` : `${heading}:`]),
    el("p", { id: "question-message" }, [interrupt.message || "The tool needs an answer."]),
    (details.mode === "url" || signIn) && details.url ? urlQuestion(details.url, reply, signIn) : formQuestion(interrupt, reply),
  );
  section.dataset.interruptId = interrupt.id;
  section.hidden = false;
  /** @type {HTMLElement | null} */ (section.querySelector("input, select, a, button"))?.focus();
}
