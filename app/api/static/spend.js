// @ts-check
/** Spend in the "Keys & spend" panel: what the caller's runs cost this UTC day and month against their
 * budgets (``GET /api/usage/me``), a table of the last 31 days grouped by day, model, agent, key (and
 * user, for an admin) from ``GET /api/usage``, and the same as a CSV download (``/api/usage/export``). */
import { download, json } from "./api.js";
import { $, el } from "./page.js";

/** @typedef {import("./keys.js").MySpend} MySpend */
/** @typedef {{group: string | null, runs: number, cost: number, inputTokens: number, outputTokens: number}} UsageRow */

const GROUPS = { day: "Day (UTC)", model: "Model", agent: "Agent", key: "API key", user: "User" };
const periods = $("spend-periods");
const table = /** @type {HTMLTableElement} */ ($("spend-table"));
const group = /** @type {HTMLSelectElement} */ ($("spend-group"));

/** The user the table is narrowed to ("": the caller's own, or everyone's for an admin). */
let shownUser = "";

/** US dollars, with enough places that a cheap run does not read as nothing. @param {number} value */
export function usd(value) {
  if (value === 0) return "$0.00";
  if (value < 0.01) return `$${value.toFixed(6)}`;
  return `$${value.toFixed(value < 1 ? 4 : 2).replace(/(\.\d\d)(\d*?)0+$/, "$1$2")}`;
}

/** "$0.000330 of $2.50" with a meter, or "$0.000330 (no budget)". @param {string} name @param {MySpend["day"]} period */
function periodLine(name, period) {
  const ends = new Date(period.endsAt).toLocaleString([], { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
  const line = el("p", { class: "period" }, [el("strong", {}, [`${name}: `]), usd(period.spent)]);
  if (period.budget === null) {
    line.append(" (no budget)");
    return line;
  }
  const left = Math.max(period.budget - period.spent, 0);
  line.append(` of ${usd(period.budget)} · ${usd(left)} left until ${ends}`);
  line.append(
    el("meter", {
      min: "0",
      max: String(period.budget),
      high: String(period.budget * 0.8),
      value: String(Math.min(period.spent, period.budget)),
      "aria-label": `${name}: ${usd(period.spent)} of ${usd(period.budget)}`,
    }),
  );
  return line;
}

/** The query for the table and the CSV: the grouping, and the chosen user's runs. */
function query() {
  const params = new URLSearchParams({ groupBy: group.value });
  if (shownUser) params.set("user", shownUser);
  return params.toString();
}

/** Key ids as their names (a run's key, in the table grouped by key). @returns {Promise<Map<string, string>>} */
async function keyNames() {
  const answer = await json(`/api/keys${shownUser ? `?owner=${encodeURIComponent(shownUser)}` : ""}`);
  return new Map(answer.keys.map((/** @type {{id: string, name: string, prefix: string}} */ key) => [key.id, `${key.name} (${key.prefix}…)`]));
}

/** @param {string | null} value @param {Map<string, string>} names */
function groupName(value, names) {
  if (value === null) return group.value === "key" ? "signed-in token" : "none";
  return names.get(value) || value;
}

/** The grouped table, read afresh. @param {boolean} guest */
async function loadTable(guest) {
  const [report, names] = await Promise.all([
    json(`/api/usage?${query()}`),
    group.value === "key" && !guest ? keyNames() : Promise.resolve(new Map()),
  ]);
  /** @type {UsageRow[]} */
  const rows = report.rows;
  const heads = ["Runs", "Cost", "Tokens in", "Tokens out"];
  const numeric = (/** @type {string | number} */ value) => el("td", { class: "number" }, [String(value)]);
  table.replaceChildren(
    el("caption", {}, [`Spend ${report.user === null ? "of everyone" : `of ${report.user}`}, ${report.since} to ${report.until} (UTC)`]),
    el("thead", {}, [
      el("tr", {}, [
        el("th", { scope: "col" }, [GROUPS[/** @type {keyof GROUPS} */ (group.value)]]),
        ...heads.map((head) => el("th", { scope: "col", class: "number" }, [head])),
      ]),
    ]),
    el(
      "tbody",
      {},
      rows.length
        ? rows.map((row) =>
            el("tr", {}, [
              el("th", { scope: "row" }, [groupName(row.group, names)]),
              numeric(row.runs),
              numeric(usd(row.cost)),
              numeric(row.inputTokens),
              numeric(row.outputTokens),
            ]),
          )
        : [el("tr", {}, [el("td", { colspan: "5" }, ["No runs in these days."])])],
    ),
    el("tfoot", {}, [el("tr", {}, [el("th", { scope: "row", colspan: "2" }, ["Total"]), numeric(usd(report.totalCost)), el("td", { colspan: "2" })])]),
  );
}

/** @type {MySpend | null} */
let caller = null;

/**
 * Show the caller's spend against their budgets and the grouped table (an admin's: everyone's, or
 * ``user``'s).
 * @param {MySpend} me @param {string} user
 */
export async function loadSpend(me, user) {
  caller = me;
  shownUser = user;
  const choices = Object.entries(GROUPS).filter(([name]) => name !== "user" || me.role === "admin");
  if (group.options.length !== choices.length) {
    const chosen = group.value || "day";
    group.replaceChildren(...choices.map(([name, label]) => el("option", { value: name }, [label])));
    group.value = choices.some(([name]) => name === chosen) ? chosen : "day";
  }
  periods.replaceChildren(
    el("p", { class: "note" }, [me.role === "admin" ? "Your own runs (no budget binds an admin):" : "Your runs:"]),
    periodLine("Today", me.day),
    periodLine("This month", me.month),
  );
  await loadTable(me.role === "guest");
}

/** Regroup on a change of "Group by"; download the CSV on its button. @param {(error: unknown) => void} onError */
export function watchSpend(onError) {
  group.addEventListener("change", () => loadTable(caller !== null && caller.role === "guest").catch(onError));
  $("spend-csv").addEventListener("click", async () => {
    try {
      const { blob, filename } = await download(`/api/usage/export?${query()}`);
      const link = el("a", { href: URL.createObjectURL(blob), download: filename });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.getAttribute("href") || ""), 10_000);
    } catch (error) {
      onError(error);
    }
  });
}
