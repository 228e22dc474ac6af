// @ts-check
/** The chat page: seed 002 §3 on the chat surface, talking only to the public JSON API. Each concern
 * has its own module; this one starts the page, and holds the colour theme and the phone drawer. */
import { watchAgentPicker } from "./agents.js";
import { token } from "./api.js";
import { signedIn, signedOut } from "./auth.js";
import { newChat, openSession, sessionList } from "./chats.js";
import { showError } from "./feedback.js";
import { $, keys, slug, stored, ui } from "./page.js";
import "./keys.js";
import "./prompts.js";
import { reattach } from "./runs.js";
import { jumpTo, setUpSearch } from "./search.js";

// -- colour theme: follow the system, or what the switch chose ---------------------------------------

const THEMES = /** @type {const} */ (["auto", "light", "dark"]);
const themeButton = /** @type {HTMLButtonElement} */ ($("theme"));

/** @param {"auto" | "light" | "dark"} theme */
function applyTheme(theme) {
  if (theme === "auto") document.documentElement.removeAttribute("data-theme");
  else document.documentElement.dataset.theme = theme;
  themeButton.textContent = `Theme: ${theme}`;
  themeButton.title = theme === "auto" ? "Colours follow the system; click for light" : `Colours: ${theme}; click for the next`;
}
themeButton.addEventListener("click", () => {
  const now = stored.get("iris.theme") || "auto";
  const next = THEMES[(THEMES.indexOf(now) + 1) % THEMES.length];
  stored.set("iris.theme", next === "auto" ? null : next);
  applyTheme(next);
});
applyTheme(THEMES.includes(stored.get("iris.theme")) ? stored.get("iris.theme") : "auto");

// -- the sidebar as a drawer on narrow screens -------------------------------------------------------

const menuToggle = $("menu-toggle");
/** @param {boolean} open */
function drawer(open) {
  document.body.classList.toggle("drawer-open", open);
  menuToggle.setAttribute("aria-expanded", String(open));
}
menuToggle.addEventListener("click", () => drawer(!document.body.classList.contains("drawer-open")));
// Choosing a chat (or starting one) closes the drawer; so do Esc and a tap outside it.
$("sidebar").addEventListener("click", (event) => {
  const target = /** @type {HTMLElement} */ (event.target);
  if (target.closest("#sessions .open, #search-results button, #new-chat")) drawer(false);
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && document.body.classList.contains("drawer-open")) {
    drawer(false);
    menuToggle.focus();
  }
});
$("main").addEventListener("click", () => drawer(false));

// -- start ------------------------------------------------------------------------------------------

setUpSearch({
  input: /** @type {HTMLInputElement} */ ($("search")),
  results: $("search-results"),
  error: showError,
  dateOf: (id) => {
    const session = sessionList.sessions.find((s) => s.id === id);
    return session ? new Date(session.lastActivityAt).toLocaleDateString([], { day: "numeric", month: "short", year: "numeric" }) : "";
  },
  open: async (result) => {
    if (result.agentSlug !== slug) {
      const jump = new URLSearchParams({ session: result.sessionId, ...(result.messageId ? { message: result.messageId } : {}) });
      location.href = `/chat/${encodeURIComponent(result.agentSlug)}?${jump}`;
      return;
    }
    await openSession(result.sessionId, { reattach: false });
    if (result.messageId) jumpTo(ui.messages, result.messageId);
    reattach(result.sessionId);
  },
});

async function start() {
  watchAgentPicker();
  const jump = new URLSearchParams(location.search); // a search hit in another agent's chat
  if (jump.get("session")) stored.set(keys.session(), jump.get("session"));
  if (location.search) history.replaceState(null, "", location.pathname);
  const value = token();
  if (value) await signedIn(value, "stored");
  else {
    signedOut();
    newChat();
  }
  const message = jump.get("message");
  if (message) jumpTo(ui.messages, message);
  document.body.dataset.ready = "true";
}

start();
