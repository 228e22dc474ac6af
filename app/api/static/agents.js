// @ts-check
/** The agent picker: shown when the signed-in caller may use more than one agent; picking one opens that
 * agent's chat (``/chat/{slug}``), whose sessions, models and tools are its own. */
import { json } from "./api.js";

/** @typedef {{slug: string, name: string, description: string, enabled: boolean, models: string[], tools: string[]}} AgentOut */

/**
 * List the caller's agents into the picker and name the current one in the header.
 * @param {string} current the slug of the agent this page chats with
 * @returns {Promise<AgentOut | null>} the current agent, when the caller may use it
 */
export async function loadAgents(current) {
  const picker = /** @type {HTMLSelectElement} */ (document.getElementById("agent"));
  const label = /** @type {HTMLElement} */ (document.getElementById("agent-label"));
  /** @type {AgentOut[]} */
  let agents = [];
  try {
    agents = (await json("/api/agents")).agents.filter((/** @type {AgentOut} */ a) => a.enabled);
  } catch {
    agents = []; // signed out or unreachable: the page reports that elsewhere; no picker meanwhile
  }
  picker.replaceChildren(
    ...agents.map((agent) => {
      const option = document.createElement("option");
      option.value = agent.slug;
      option.textContent = agent.name;
      if (agent.description) option.title = agent.description;
      return option;
    }),
  );
  const found = agents.find((agent) => agent.slug === current) || null;
  if (found) picker.value = current;
  label.hidden = agents.length < 2 || !found;
  const name = document.getElementById("agent-name");
  if (name) name.textContent = found ? found.name : current;
  return found;
}

/**
 * This page's agent does not exist (or is not the caller's): say so and offer the agents there are.
 * @param {string} current
 */
export function offerAgents(current) {
  const picker = /** @type {HTMLSelectElement} */ (document.getElementById("agent"));
  const label = /** @type {HTMLElement} */ (document.getElementById("agent-label"));
  const error = /** @type {HTMLElement} */ (document.getElementById("error"));
  const placeholder = document.createElement("option");
  placeholder.value = "";
  placeholder.textContent = "Choose an agent";
  placeholder.disabled = true;
  picker.prepend(placeholder);
  picker.value = "";
  label.hidden = picker.options.length < 2;
  error.textContent = label.hidden
    ? `There is no agent "${current}" here, and none you may use.`
    : `There is no agent "${current}" here: choose one from the Agent list.`;
}

/** Signed out: no agents to pick from. */
export function clearAgents() {
  /** @type {HTMLElement} */ (document.getElementById("agent-label")).hidden = true;
  /** @type {HTMLSelectElement} */ (document.getElementById("agent")).replaceChildren();
}

/** Picking another agent opens its chat (its own sessions: a thread keeps the agent it began with). */
export function watchAgentPicker() {
  const picker = /** @type {HTMLSelectElement} */ (document.getElementById("agent"));
  picker.addEventListener("change", () => {
    location.assign(`/chat/${encodeURIComponent(picker.value)}`);
  });
}
