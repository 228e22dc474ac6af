// @ts-check
/** Signing in: as a guest or with a pasted token (Enter submits it); signing out. The token is kept
 * across tabs and restarts until it expires; then the page says so and asks again. Another tab signing
 * in or out is followed here. */
import { clearAgents, loadAgents, offerAgents } from "./agents.js";
import { ApiError, claimsOf, expired, json, setToken, token } from "./api.js";
import { loadLimits, loadModels, loadSessions, newChat, openSession } from "./chats.js";
import { EXPIRED, clearError, showError } from "./feedback.js";
import { $, base, keys, slug, stored, ui } from "./page.js";

/** @type {number | undefined} */
let expiryTimer;

/** Show the sign-in controls (and only them), with why when there is a reason. @param {string} [why] */
export function signedOut(why) {
  setToken(null);
  clearTimeout(expiryTimer);
  clearAgents();
  ui.signin.hidden = false;
  ui.account.hidden = true;
  ui.who.textContent = "";
  ui.sessions.replaceChildren();
  if (why) ui.error.textContent = why;
}

/** Sign out when the token's ``exp`` comes (the next request would be refused anyway). @param {string} value */
function watchExpiry(value) {
  clearTimeout(expiryTimer);
  const claims = claimsOf(value);
  if (!claims || typeof claims.exp !== "number") return;
  const wait = Math.min(claims.exp * 1000 - Date.now(), 2 ** 31 - 1);
  expiryTimer = window.setTimeout(() => signedOut(EXPIRED), Math.max(wait, 0));
}

/**
 * Use a token: checked with the server first, so a bad or expired one never shows as signed in.
 * @param {string} value
 * @param {"guest" | "token" | "stored"} how where it came from (a pasted one is told apart when refused)
 */
export async function signedIn(value, how) {
  if (expired(value)) {
    signedOut(how === "token" ? "That token has expired: paste a current one." : EXPIRED);
    return;
  }
  setToken(value);
  try {
    await json(`${base}/sessions?limit=1`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      signedOut(how === "token" ? `${error.detail} (${error.code})` : EXPIRED);
      return;
    }
    if (!(error instanceof ApiError && error.code === "agent_not_found")) showError(error);
  }
  watchExpiry(value);
  await loadModels();
  await loadLimits();
  ui.signin.hidden = true;
  ui.who.textContent = describeToken(value);
  const agent = await loadAgents(slug);
  if (!agent) {
    ui.account.hidden = false;
    offerAgents(slug);
    return;
  }
  await loadSessions();
  const remembered = stored.get(keys.session());
  if (remembered) await openSession(remembered, { reattach: true });
  else newChat();
  ui.account.hidden = false; // shown once the page is ready to chat (a re-attached answer may still run)
}

/** @param {string} value */
export function describeToken(value) {
  const claims = claimsOf(value);
  if (!claims) return "Signed in";
  return claims.is_anonymous ? "Signed in as a guest" : `Signed in as ${claims.sub}`;
}

$("guest").addEventListener("click", async () => {
  clearError();
  try {
    const answer = await json("/api/auth/guest", { method: "POST" });
    await signedIn(answer.accessToken, "guest");
  } catch (error) {
    showError(error);
  }
});

$("token-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  clearError();
  const value = ui.tokenInput.value.trim();
  if (!value) return;
  ui.tokenInput.value = "";
  await signedIn(value, "token");
});

$("signout").addEventListener("click", () => {
  stored.set(keys.session(), null);
  signedOut();
  newChat();
});

// Another tab signed in or out: follow it.
window.addEventListener("storage", (event) => {
  if (event.key !== "iris.token" || event.newValue === event.oldValue) return;
  if (!event.newValue) signedOut();
  else if (event.newValue !== token() || ui.account.hidden) signedIn(event.newValue, "stored");
});
