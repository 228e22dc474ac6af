// @ts-check
/** The chat page: seed 002 §3 on the chat surface, talking only to the public JSON API. Each concern has its own module; this one starts the page. */
import { watchAgentPicker } from "./agents.js";
import { token } from "./api.js";
import { signedIn, signedOut } from "./auth.js";
import { loadLimits, loadModels, newChat, openSession } from "./chats.js";
import { showError } from "./feedback.js";
import { reattach } from "./live.js";
import { $, keys, slug, stored, ui } from "./page.js";
import { jumpTo, setUpSearch } from "./search.js";

// -- start ------------------------------------------------------------------------------------------

setUpSearch({
  input: /** @type {HTMLInputElement} */ ($("search")),
  results: $("search-results"),
  error: showError,
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
  await loadModels();
  await loadLimits();
  const jump = new URLSearchParams(location.search); // a search hit in another agent's chat
  if (jump.get("session")) stored.set(keys.session(), jump.get("session"));
  if (location.search) history.replaceState(null, "", location.pathname);
  const value = token();
  if (value) await signedIn(value);
  else {
    signedOut();
    newChat();
  }
  const message = jump.get("message");
  if (message) jumpTo(ui.messages, message);
  document.body.dataset.ready = "true";
}

start();
