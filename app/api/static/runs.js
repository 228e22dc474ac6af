// @ts-check
/**
 * Runs per chat: each chat may have an answer going, which goes on while other chats are used; Send,
 * Stop, Edit and Regenerate follow the chat shown. A run's events are logged (in localStorage) so a
 * reload or a broken connection re-attaches where it left off (``GET …/chat/stream`` with
 * ``Last-Event-ID``); a stream that breaks keeps the partial answer and reconnects by itself, and a run
 * that ends in an error keeps it too and offers Regenerate.
 */
import { ApiError, events, getStream, json, postStream, uuid4 } from "./api.js";
import { refresh, sessionList } from "./chats.js";
import { regenerate } from "./composer.js";
import { clearError, showError, showProblem } from "./feedback.js";
import { LiveRun } from "./live.js";
import { $, addExtras, base, el, keys, state, stored, ui } from "./page.js";
import { hideQuestion, showQuestion } from "./questions.js";

/** @typedef {import("./api.js").AgUiEvent} AgUiEvent */
/** @typedef {{runId: string | null, lastEventId: string | null, events: AgUiEvent[]}} RunLog */
/** @typedef {{sessionId: string, runId: string | null, log: RunLog, view: LiveRun | null, stopping: boolean}} Running */

/** The chats answering now, by session id. @type {Map<string, Running>} */
const runs = new Map();
/** Reconnection attempts after a broken stream, by session id. @type {Map<string, number>} */
const attempts = new Map();
const RECONNECT_MS = 2000;
const MAX_ATTEMPTS = 15;

/** The run of the chat shown, if it is answering. */
export function runningHere() {
  return state.sessionId ? runs.get(state.sessionId) || null : null;
}

/** Send/Stop and the message buttons as the chat shown needs them; the sessions list marks the busy chats. */
export function showRunning() {
  const here = runningHere() !== null;
  ui.stop.hidden = !here;
  ui.send.disabled = here;
  for (const button of ui.messages.querySelectorAll(".actions > button")) /** @type {HTMLButtonElement} */ (button).disabled = here;
  sessionList.markRunning(new Set(runs.keys()));
}

/** Show the answer so far of the chat shown (its history is already rendered), and keep it showing. */
export function showLive() {
  const running = runningHere();
  if (running) {
    for (const item of ui.messages.querySelectorAll("li.live")) item.remove(); // replayed below, once
    running.view = new LiveRun(running.sessionId);
    for (const event of running.log.events) running.view.apply(event);
    running.view.showWaiting();
  }
  showRunning();
}

/** @param {string} sessionId @returns {Running} */
function newRunning(sessionId) {
  return { sessionId, runId: null, log: { runId: null, lastEventId: null, events: [] }, view: null, stopping: false };
}

/**
 * Read a run's stream to its end, logging each event so a reload can re-attach where it left off.
 * @param {Response} response
 * @param {string} sessionId
 * @param {RunLog | null} replay the events seen before (a reload, a reconnection), shown again first
 */
async function follow(response, sessionId, replay) {
  const running = runs.get(sessionId) || newRunning(sessionId);
  if (replay) running.log = replay;
  running.runId = running.log.runId;
  runs.set(sessionId, running);
  if (state.sessionId === sessionId) showLive();
  /** @type {AgUiEvent | null} */
  let last = null;
  try {
    for await (const { id, event } of events(response)) {
      running.log.events.push(event);
      if (id) running.log.lastEventId = id;
      if (event.type === "RUN_STARTED") {
        running.runId = running.log.runId = event.runId;
        sessionList.load(); // a new chat joins the list (marked as answering) as soon as it runs
      }
      if (running.view && state.sessionId === sessionId) running.view.apply(event);
      if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") last = event;
      stored.set(keys.log(sessionId), last ? null : running.log);
    }
  } catch {
    last = null; // the connection broke: handled below as a stream that ended without its last event
  }
  runs.delete(sessionId);
  if (last) await ended(running, last);
  else await broke(running);
  showRunning();
}

/** The last assistant message this run streamed, by id. @param {Running} running */
function lastAnswerId(running) {
  const starts = running.log.events.filter((e) => e.type === "TEXT_MESSAGE_START");
  return starts.length ? starts[starts.length - 1].messageId : null;
}

/** A run reached its last event. @param {Running} running @param {AgUiEvent} last */
async function ended(running, last) {
  const { sessionId } = running;
  attempts.delete(sessionId);
  const answerId = lastAnswerId(running);
  if (running.stopping && answerId) addExtras(sessionId, answerId, { stopped: true });
  const outcome = last.outcome || {};
  if (last.type === "RUN_FINISHED" && outcome.type === "interrupt" && outcome.interrupts && outcome.interrupts.length) {
    stored.set(keys.interrupt(sessionId), outcome.interrupts[0]);
  }
  if (state.sessionId !== sessionId) return;
  const partial = running.view ? running.view.items() : [];
  await refresh();
  if (last.type === "RUN_ERROR" && !running.stopping) {
    keepPartial(partial, "interrupted");
    showProblem(`${last.message} (${last.code || "run_error"})`, [["Regenerate", () => regenerate()]]);
  } else {
    showInterrupt(stored.get(keys.interrupt(sessionId)));
    announce();
  }
}

/** The stream broke before the run's last event: keep what came, and reconnect. @param {Running} running */
async function broke(running) {
  const { sessionId } = running;
  const tried = (attempts.get(sessionId) || 0) + 1;
  attempts.set(sessionId, tried);
  if (state.sessionId === sessionId) {
    for (const item of running.view ? running.view.items() : []) item.classList.add("interrupted");
    if (running.view) running.view.dropWaiting();
    const again = tried <= MAX_ATTEMPTS ? " Reconnecting…" : "";
    showProblem(`The connection to Iris broke off mid-answer; the text so far is kept.${again}`, [
      ["Retry", () => reattach(sessionId)],
      ["Regenerate", () => regenerate()],
    ]);
  }
  if (tried <= MAX_ATTEMPTS) setTimeout(() => reconnect(sessionId), RECONNECT_MS);
}

/** A reconnection attempt, unless the chat has moved on (another run, or an answer now). @param {string} sessionId */
function reconnect(sessionId) {
  if (!runs.has(sessionId) && stored.get(keys.log(sessionId))) reattach(sessionId);
}

/**
 * Put back the partial answer a re-read history does not hold, marked.
 * @param {HTMLElement[]} items @param {"interrupted" | "stopped"} how
 */
function keepPartial(items, how) {
  const known = new Set(state.history.map((m) => m.id));
  for (const item of items) {
    if (item.classList.contains("waiting")) continue;
    const id = item.getAttribute("data-message-id");
    if (id && known.has(id)) continue;
    item.classList.add(how);
    item.removeAttribute("aria-busy");
    if (item.classList.contains("assistant")) item.append(el("div", { class: "marker" }, ["The answer was interrupted."]));
    ui.messages.append(item);
  }
}

/** Say the finished answer once to screen readers (the list itself is not a live region). */
function announce() {
  const answers = ui.messages.querySelectorAll(".msg.assistant .text.markdown");
  const last = answers[answers.length - 1];
  const text = last ? (last.textContent || "").trim() : "";
  ui.announcer.textContent = text ? `Answer finished: ${text.slice(0, 400)}` : "Answer finished.";
}

/**
 * Follow the chat's answer if one is going (after a reload, or to reconnect).
 * @param {string} sessionId
 */
export async function reattach(sessionId) {
  if (runs.has(sessionId)) return;
  /** @type {RunLog | null} */
  const log = stored.get(keys.log(sessionId));
  let response;
  try {
    response = await getStream(`${base}/chat/stream?sessionId=${encodeURIComponent(sessionId)}`, log ? log.lastEventId : null);
  } catch (error) {
    if (error instanceof ApiError && error.code === "network_error" && log) {
      await broke({ ...newRunning(sessionId), log });
      return;
    }
    showError(error);
    return;
  }
  if (!response) {
    // Nothing runs there now: the answer ended while nobody listened (a restart ends it as lost).
    stored.set(keys.log(sessionId), null);
    if (log && attempts.has(sessionId)) {
      attempts.delete(sessionId);
      if (state.sessionId === sessionId) {
        const partial = /** @type {HTMLElement[]} */ (Array.from(ui.messages.querySelectorAll("li.live")));
        await refresh();
        keepPartial(partial, "interrupted");
        showProblem("The answer ended while Iris could not be reached (it restarted); the text so far is kept.", [
          ["Regenerate", () => regenerate()],
        ]);
      }
    }
    return;
  }
  if (state.sessionId === sessionId) clearError();
  follow(response, sessionId, log);
}

/** Start a run in the chat shown; false when it was refused (nothing was sent). @param {Record<string, unknown>} body */
export async function run(body) {
  clearError();
  const sessionId = state.sessionId || uuid4();
  state.sessionId = sessionId;
  const running = newRunning(sessionId);
  runs.set(sessionId, running);
  showLive();
  let response;
  try {
    response = await postStream(`${base}/chat`, { sessionId, modelId: ui.model.value || undefined, ...body });
  } catch (error) {
    if (running.view) running.view.dropWaiting();
    runs.delete(sessionId);
    showRunning();
    showError(error);
    return false;
  }
  stored.set(keys.session(), sessionId);
  attempts.delete(sessionId);
  follow(response, sessionId, null);
  return true;
}

ui.stop.addEventListener("click", async () => {
  const running = runningHere();
  if (!running || !running.runId) return;
  running.stopping = true;
  try {
    await json(`/agent/runs/${encodeURIComponent(running.runId)}/cancel`, { method: "POST" });
  } catch (error) {
    showError(error);
  }
});

// -- approval interrupts, and questions a tool asks (questions.js) -----------------------------------

/** @typedef {import("./questions.js").Interrupt} Interrupt */

/** Show the chat's open interrupt: an approval, a tool's question (``input_required``), or a sign-in (``authorization_required``). @param {Interrupt | null} interrupt */
export function showInterrupt(interrupt) {
  const asks = interrupt && (interrupt.reason === "input_required" || interrupt.reason === "authorization_required");
  const question = asks ? interrupt : null;
  const approval = question ? null : interrupt;
  ui.approval.hidden = !approval;
  ui.approvalQuestion.textContent = approval ? approval.message || "The assistant asks for approval." : "";
  ui.approval.dataset.interruptId = approval ? approval.id : "";
  if (question) showQuestion(question, (status, payload) => answerQuestion(question, status, payload));
  else hideQuestion();
}

/** @param {Interrupt} question @param {"resolved" | "cancelled"} status @param {Record<string, unknown>} [payload] */
async function answerQuestion(question, status, payload) {
  if (!state.sessionId) return;
  hideQuestion();
  stored.set(keys.interrupt(state.sessionId), null);
  const ok = await run({ resume: [{ interruptId: question.id, status, ...(payload ? { payload } : {}) }] });
  if (!ok) showInterrupt(question);
}

/** @param {"resolved" | "cancelled"} status */
async function answerInterrupt(status) {
  const interruptId = ui.approval.dataset.interruptId;
  if (!interruptId || !state.sessionId) return;
  const sessionId = state.sessionId;
  ui.approval.hidden = true;
  stored.set(keys.interrupt(sessionId), null);
  const ok = await run({ resume: [{ interruptId, status }] });
  if (!ok) showInterrupt({ id: interruptId, message: ui.approvalQuestion.textContent || "" });
}
$("approve").addEventListener("click", () => answerInterrupt("resolved"));
$("deny").addEventListener("click", () => answerInterrupt("cancelled"));
