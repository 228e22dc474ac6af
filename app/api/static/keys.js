// @ts-check
/** The "Keys & spend" panel: a modal dialog (the keyboard stays inside; Esc or Close gives it back to
 * the header button) with the caller's spend (spend.js) and their API keys: the list, a form to make
 * one, its secret shown once with a copy button, and revoking after a confirmation. An admin sees
 * everyone's keys and spend, or one user's; a guest is told keys need an account. */
import { ApiError, json } from "./api.js";
import { showError } from "./feedback.js";
import { $, el } from "./page.js";
import { loadSpend, usd, watchSpend } from "./spend.js";

/** @typedef {{agents: string[] | null, models: string[] | null, surfaces: string[] | null}} KeyScopes */
/** @typedef {{id: string, prefix: string, name: string, owner: string, role: string, scopes: KeyScopes, createdAt: string, expiresAt: string | null, requestsPerMinute: number | null, tokensPerMinute?: number | null, budgetDayUsd?: number | null, budgetMonthUsd?: number | null, revokedAt: string | null, lastUsedAt: string | null}} ApiKeyOut */
/** @typedef {{user: string, role: "user" | "admin" | "guest", day: {spent: number, budget: number | null, endsAt: string}, month: {spent: number, budget: number | null, endsAt: string}}} MySpend */

const SURFACES = ["agui", "chat", "ui-chat", "openai", "responses", "anthropic", "api"];
const dialog = /** @type {HTMLDialogElement} */ ($("keys-panel"));
const status = $("keys-status");
const problem = $("keys-error");
const list = $("key-list");
const secret = $("new-secret");
const filter = /** @type {HTMLFormElement} */ ($("keys-filter"));
const userInput = /** @type {HTMLInputElement} */ ($("keys-user"));

/** What had focus before the panel opened. @type {HTMLElement | null} */
let opener = null;
/** @type {MySpend | null} */
let me = null;

/** @param {string} id */
const input = (id) => /** @type {HTMLInputElement} */ ($(id));

/** Say it once through the panel's status region. @param {string} text */
export function announce(text) {
  status.textContent = "";
  setTimeout(() => (status.textContent = text), 50);
}

/** A refusal as the API words it (its problem ``detail`` and ``code``); a lapsed sign-in closes the panel. @param {unknown} error */
export function refused(error) {
  if (error instanceof ApiError && error.status === 401) {
    dialog.close();
    showError(error);
  } else problem.textContent = error instanceof ApiError ? `${error.detail} (${error.code})` : String(error);
}

/** The user an admin narrowed the panel to ("" for everyone; a user always sees their own). */
function chosenUser() {
  return me && me.role === "admin" ? userInput.value.trim() : "";
}

/** @param {string | null} iso */
function day(iso) {
  return iso ? new Date(iso).toLocaleDateString([], { day: "numeric", month: "short", year: "numeric" }) : "";
}

/** @param {ApiKeyOut} key */
function limitsOf(key) {
  const parts = [
    key.budgetDayUsd != null ? `${usd(key.budgetDayUsd)} a day` : "",
    key.budgetMonthUsd != null ? `${usd(key.budgetMonthUsd)} a month` : "",
    key.requestsPerMinute != null ? `${key.requestsPerMinute} requests/min` : "",
    key.tokensPerMinute != null ? `${key.tokensPerMinute} tokens/min` : "",
  ].filter(Boolean);
  return parts.length ? parts.join(", ") : "none";
}

/** @param {KeyScopes} scopes */
function scopesOf(scopes) {
  const parts = [
    scopes.agents ? `agents ${scopes.agents.join(", ") || "none"}` : "",
    scopes.models ? `models ${scopes.models.join(", ") || "none"}` : "",
    scopes.surfaces ? `surfaces ${scopes.surfaces.join(", ") || "none"}` : "",
  ].filter(Boolean);
  return parts.length ? parts.join("; ") : "everything the owner may use";
}

/** One key as a card: its facts, and Revoke (asked twice) while it is live. @param {ApiKeyOut} key @param {Map<string, number>} spent */
function keyItem(key, spent) {
  /** @type {[string, string][]} */
  const facts = [
    ["Prefix", `${key.prefix}…`],
    ...(me && me.role === "admin" ? /** @type {[string, string][]} */ ([["Owner", key.role === "admin" ? `${key.owner} (admin key)` : key.owner]]) : []),
    ["Scopes", scopesOf(key.scopes)],
    ["Expires", key.expiresAt ? day(key.expiresAt) : "never"],
    ["Limits", limitsOf(key)],
    ["Spend (31 days)", usd(spent.get(key.id) || 0)],
    ["Last used", key.lastUsedAt ? day(key.lastUsedAt) : "never"],
  ];
  if (key.revokedAt) facts.push(["Revoked", day(key.revokedAt)]);
  const item = el("li", { class: key.revokedAt ? "key revoked" : "key", "aria-label": `Key ${key.name}` }, [
    el("h4", {}, [key.name]),
    el("dl", {}, facts.flatMap(([name, value]) => [el("dt", {}, [name]), el("dd", {}, [value])])),
  ]);
  if (!key.revokedAt) item.append(revokeControls(key));
  return item;
}

/** Revoke, then "Revoke key X now?" with Revoke now and Keep it. @param {ApiKeyOut} key */
function revokeControls(key) {
  const box = el("div", { class: "key-actions" });
  const ask = el("button", { type: "button", class: "danger" }, [`Revoke ${key.name}`]);
  ask.addEventListener("click", () => {
    const yes = el("button", { type: "button", class: "danger" }, ["Revoke now"]);
    const no = el("button", { type: "button" }, ["Keep it"]);
    box.replaceChildren(el("span", {}, [`Revoke "${key.name}"? Whatever uses it stops working.`]), yes, no);
    no.addEventListener("click", () => {
      box.replaceChildren(ask);
      ask.focus();
    });
    yes.addEventListener("click", async () => {
      try {
        await json(`/api/keys/${encodeURIComponent(key.id)}`, { method: "DELETE" });
        announce(`Key ${key.name} revoked.`);
        await loadKeys();
        $("api-keys-title").focus();
      } catch (error) {
        refused(error);
      }
    });
    yes.focus();
  });
  box.append(ask);
  return box;
}

/** List the keys (the caller's; an admin's: everyone's or the chosen user's) with each one's spend. */
async function loadKeys() {
  if (!me || me.role === "guest") {
    list.replaceChildren();
    return;
  }
  const user = chosenUser();
  const [answer, usage] = await Promise.all([
    json(`/api/keys${user ? `?owner=${encodeURIComponent(user)}` : ""}`),
    json(`/api/usage?groupBy=key${user ? `&user=${encodeURIComponent(user)}` : ""}`),
  ]);
  /** @type {Map<string, number>} */
  const spent = new Map(usage.rows.map((/** @type {{group: string, cost: number}} */ row) => [row.group, row.cost]));
  /** @type {ApiKeyOut[]} */
  const keys = answer.keys;
  list.replaceChildren(...(keys.length ? keys.map((key) => keyItem(key, spent)) : [el("li", { class: "note" }, ["No keys yet."])]));
}

/** @param {string} id */
function listOf(id) {
  const words = input(id).value.split(",").map((word) => word.trim()).filter(Boolean);
  return words.length ? words : null;
}

/** @param {string} id */
function numberOf(id) {
  const raw = input(id).value.trim();
  return raw === "" ? null : Number(raw);
}

/** The form as ``POST /api/keys`` takes it (a blank field is left out: any, none, never). */
function newKeyBody() {
  const surfaces = [...$("key-surfaces").querySelectorAll("input:checked")].map((box) => /** @type {HTMLInputElement} */ (box).value);
  /** @type {Record<string, unknown>} */
  const body = {
    name: input("key-name").value.trim(),
    scopes: { agents: listOf("key-agents"), models: listOf("key-models"), surfaces: surfaces.length ? surfaces : null },
  };
  /** @type {[string, string][]} */
  const numbers = [
    ["expiresInDays", "key-expiry"],
    ["budgetDayUsd", "key-budget-day"],
    ["budgetMonthUsd", "key-budget-month"],
    ["requestsPerMinute", "key-rpm"],
    ["tokensPerMinute", "key-tpm"],
  ];
  for (const [name, id] of numbers) if (numberOf(id) !== null) body[name] = numberOf(id);
  if (me && me.role === "admin") {
    if (input("key-owner").value.trim()) body.owner = input("key-owner").value.trim();
    if (input("key-admin").checked) body.role = "admin";
  }
  return body;
}

/** The new key's secret, this once, with Copy and a plain warning. @param {{key: string, name: string}} created */
function showSecret(created) {
  const value = el("code", { id: "secret-value" }, [created.key]);
  const copy = el("button", { type: "button" }, ["Copy key"]);
  const done = el("button", { type: "button" }, ["Done"]);
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(created.key);
      announce("Key copied.");
    } catch {
      getSelection()?.selectAllChildren(value); // no clipboard here: the key is selected to copy by hand
      announce("Copying was refused: the key is selected, copy it with the keyboard.");
    }
  });
  done.addEventListener("click", () => {
    secret.hidden = true;
    secret.replaceChildren();
    input("key-name").focus();
  });
  secret.replaceChildren(
    el("p", {}, [el("strong", {}, [`Your new key "${created.name}".`]), " Copy it now: you won't see it again."]),
    value,
    el("div", { class: "key-actions" }, [copy, done]),
  );
  secret.hidden = false;
  copy.focus();
}

/** The new-key form, put in the panel the first time it opens (so that its fields are not on the page,
 * among the chat's own controls, until then). */
function mountForm() {
  const template = /** @type {HTMLTemplateElement} */ ($("key-form-template"));
  template.after(template.content.cloneNode(true));
  const form = /** @type {HTMLFormElement} */ ($("key-form"));
  for (const surface of SURFACES) {
    $("key-surfaces").append(el("label", { class: "check" }, [el("input", { type: "checkbox", value: surface }), ` ${surface}`]));
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    create(form);
  });
  return form;
}

/** Make the key the form describes, and show its secret. @param {HTMLFormElement} form */
async function create(form) {
  problem.textContent = "";
  const button = /** @type {HTMLButtonElement} */ ($("key-create"));
  button.disabled = true; // one key per press, however often it is pressed
  try {
    const created = await json("/api/keys", {
      method: "POST",
      body: JSON.stringify(newKeyBody()),
      headers: { "Content-Type": "application/json" },
    });
    form.reset();
    await loadKeys();
    showSecret(created);
    announce(`Key ${created.name} created. Copy it now: you won't see it again.`);
  } catch (error) {
    refused(error);
  } finally {
    button.disabled = false;
  }
}

/** Everything the panel shows, for who the caller is now. */
async function refresh() {
  problem.textContent = "";
  try {
    me = /** @type {MySpend} */ (await json("/api/usage/me"));
    const admin = me.role === "admin";
    filter.hidden = !admin;
    const form = document.getElementById("key-form") || mountForm();
    for (const node of form.querySelectorAll(".admin-only")) /** @type {HTMLElement} */ (node).hidden = !admin;
    form.hidden = me.role === "guest";
    $("keys-guest").hidden = me.role !== "guest";
    await Promise.all([loadKeys(), loadSpend(me, chosenUser())]);
  } catch (error) {
    refused(error);
  }
}

filter.addEventListener("submit", (event) => {
  event.preventDefault();
  refresh();
});

/** The keyboard stays in the panel: Tab past its last control comes back to its first. @param {KeyboardEvent} event */
function trapFocus(event) {
  if (event.key !== "Tab") return;
  const controls = [...dialog.querySelectorAll("button, input, select, summary, a[href], [tabindex='0']")].filter(
    (node) => /** @type {HTMLElement} */ (node).offsetParent !== null && !(/** @type {HTMLButtonElement} */ (node).disabled),
  );
  const first = /** @type {HTMLElement} */ (controls[0]);
  const last = /** @type {HTMLElement} */ (controls[controls.length - 1]);
  if (event.shiftKey && document.activeElement === first) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}

$("api-keys-title").setAttribute("tabindex", "-1");
dialog.addEventListener("keydown", trapFocus);
dialog.addEventListener("close", () => {
  secret.hidden = true;
  secret.replaceChildren(); // the secret is gone once the panel closes
  if (opener && opener.isConnected) opener.focus();
  opener = null;
});
$("keys-close").addEventListener("click", () => dialog.close());
$("keys-open").addEventListener("click", () => {
  opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  dialog.showModal();
  $("keys-close").focus();
  refresh();
});
watchSpend(refused);
