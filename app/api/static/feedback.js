// @ts-check
/** Errors as the page shows them: the API's problem detail and code, when a refused request may be
 * tried again, and an expired sign-in said as such. */
import { ApiError, token } from "./api.js";
import { signedOut } from "./auth.js";
import { el, ui } from "./page.js";

export const EXPIRED = "Your session has expired — sign in again.";

/** @param {unknown} error */
export function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    const had = token();
    signedOut(had ? EXPIRED : "Sign in first: continue as a guest or paste a token.");
    return;
  }
  if (error instanceof ApiError) ui.error.textContent = `${error.detail} (${error.code})${retryText(error)}`;
  else ui.error.textContent = String(error);
}

/**
 * A problem with what the user can do about it (buttons after the text).
 * @param {string} text @param {[string, () => unknown][]} actions
 */
export function showProblem(text, actions) {
  const buttons = actions.map(([label, act]) => {
    const button = el("button", { type: "button" }, [label]);
    button.addEventListener("click", () => {
      clearError();
      act();
    });
    return button;
  });
  ui.error.replaceChildren(el("span", {}, [text]), el("span", { class: "actions" }, buttons));
}

/** " Try again in 30 s (at 14:02:10)." for a 429 that says when; "" otherwise. @param {ApiError} error */
export function retryText(error) {
  if (error.status !== 429) return "";
  if (error.retryAfter === null) return " Try again later.";
  const at = new Date(Date.now() + error.retryAfter * 1000).toLocaleTimeString();
  return ` Try again in ${Math.ceil(error.retryAfter)} s (at ${at}).`;
}

export function clearError() {
  ui.error.textContent = "";
}
