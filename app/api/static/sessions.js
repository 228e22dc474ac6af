// @ts-check
/**
 * The sessions list of the chat page: pinned chats first, then the most recently active, a page at a
 * time ("More chats"), archived ones behind "Archived chats". Each chat has a menu (its "⋯" button):
 * Rename (Enter saves, Esc cancels), Pin/Unpin, Archive/Unarchive, Export as JSON or Markdown, Delete.
 * Menus open with Enter or a click, ArrowUp/ArrowDown move inside them, Esc closes them. "Import a
 * chat" takes a JSON export back as a new chat. Delete can be undone for a few seconds: the chat leaves
 * the list at once and is deleted on the server only when the undo offer ends. Chats answering now are
 * marked.
 */
import { download, json } from "./api.js";

/** @typedef {import("./api.js").SessionOut} SessionOut */
/**
 * @typedef {{
 *   list: HTMLElement, more: HTMLButtonElement, archived: HTMLButtonElement, importFile: HTMLInputElement,
 *   base: string, current: () => string | null, open: (id: string) => void, deleted: (id: string) => void,
 *   error: (e: unknown) => void,
 * }} Options
 */

const PAGE = 50;
const UNDO_MS = 6000;

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 */
function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  node.append(...children);
  return node;
}

export class SessionList {
  /** @param {Options} options */
  constructor(options) {
    this.o = options;
    /** @type {SessionOut[]} */ this.sessions = [];
    /** Chats deleted but still undoable, by id. @type {Map<string, number>} */ this.pendingDeletes = new Map();
    /** @type {Set<string>} */ this.running = new Set();
    this.stale = false;
    /** @type {number | null} */ this.nextOffset = null;
    this.showArchived = false;
    options.more.addEventListener("click", () => this.loadMore());
    options.archived.addEventListener("click", () => {
      this.showArchived = !this.showArchived;
      options.archived.textContent = this.showArchived ? "Back to chats" : "Archived chats";
      options.archived.setAttribute("aria-pressed", String(this.showArchived));
      this.load();
    });
    options.importFile.addEventListener("change", () => this.importChosen());
    // Leaving the page ends the undo offers: the deletes go out now (keepalive outlives the page).
    window.addEventListener("pagehide", () => {
      for (const [id, timer] of this.pendingDeletes) {
        clearTimeout(timer);
        json(`${this.o.base}/sessions/${encodeURIComponent(id)}`, { method: "DELETE", keepalive: true }).catch(() => {});
      }
      this.pendingDeletes.clear();
    });
    document.addEventListener("click", (event) => {
      if (!(event.target instanceof Node) || !options.list.contains(event.target)) this.closeMenus();
    });
  }

  /** The first page again (after anything changed). */
  async load() {
    await this.fetchPage(0, []);
  }

  async loadMore() {
    if (this.nextOffset !== null) await this.fetchPage(this.nextOffset, this.sessions);
  }

  /** @param {number} offset @param {SessionOut[]} before */
  async fetchPage(offset, before) {
    try {
      const query = `?limit=${PAGE}&offset=${offset}${this.showArchived ? "&archived=true" : ""}`;
      const answer = await json(`${this.o.base}/sessions${query}`);
      this.sessions = [...before, ...answer.sessions];
      this.nextOffset = answer.nextOffset ?? null;
      this.render();
    } catch (error) {
      this.o.error(error);
    }
  }

  render() {
    if (this.o.list.querySelector(".session-menu")) {
      this.stale = true; // a menu is open: the list is redrawn when it closes
      return;
    }
    this.stale = false;
    this.o.more.hidden = this.nextOffset === null;
    const shown = this.sessions.filter((s) => !this.pendingDeletes.has(s.id));
    this.o.list.replaceChildren(...shown.map((s) => this.item(s)));
  }

  /** Mark the chats answering now. @param {Set<string>} ids */
  markRunning(ids) {
    this.running = ids;
    for (const item of this.o.list.querySelectorAll("li[data-session-id]")) {
      const busy = ids.has(/** @type {HTMLElement} */ (item).dataset.sessionId || "");
      item.classList.toggle("running", busy);
      const open = item.querySelector(".open");
      if (open) open.setAttribute("aria-description", busy ? "answering" : "");
    }
  }

  /** @param {SessionOut} session */
  item(session) {
    const title = session.title || "Untitled chat";
    const open = el("button", { type: "button", class: "open", title }, [title]);
    open.addEventListener("click", () => this.o.open(session.id));
    const menuButton = el("button", { type: "button", class: "more", "aria-label": `Actions for chat ${title}`, "aria-haspopup": "menu", "aria-expanded": "false" }, ["⋯"]);
    const classes = [session.id === this.o.current() ? "current" : "", this.running.has(session.id) ? "running" : ""].filter(Boolean).join(" ");
    const item = el("li", session.id === this.o.current() ? { class: classes, "aria-current": "true" } : classes ? { class: classes } : {}, [
      ...(session.pinned ? [el("span", { class: "pin", title: "Pinned", "aria-label": "Pinned" }, ["📌"])] : []),
      open,
      menuButton,
    ]);
    item.dataset.sessionId = session.id;
    menuButton.addEventListener("click", (event) => {
      event.stopPropagation();
      this.toggleMenu(item, session, menuButton);
    });
    return item;
  }

  closeMenus() {
    for (const menu of this.o.list.querySelectorAll(".session-menu")) menu.remove();
    for (const button of this.o.list.querySelectorAll(".more")) button.setAttribute("aria-expanded", "false");
    // After the chosen action has started (a rename puts its box in the row first).
    if (this.stale) setTimeout(() => this.stale && !this.o.list.querySelector(".rename") && this.render(), 0);
  }

  /** @param {HTMLElement} item @param {SessionOut} session @param {HTMLElement} opener */
  toggleMenu(item, session, opener) {
    const wasOpen = item.querySelector(".session-menu");
    this.closeMenus();
    if (wasOpen) return;
    const title = session.title || "Untitled chat";
    /** @type {[string, () => unknown][]} */
    const actions = [
      ["Rename", () => this.rename(item, session)],
      [session.pinned ? "Unpin" : "Pin", () => this.patch(session.id, { pinned: !session.pinned })],
      [session.archived ? "Unarchive" : "Archive", () => this.patch(session.id, { archived: !session.archived })],
      ["Export as JSON", () => this.export(session.id, "json")],
      ["Export as Markdown", () => this.export(session.id, "markdown")],
      ["Delete", () => this.remove(session.id)],
    ];
    const menu = el("ul", { class: "session-menu", role: "menu", "aria-label": `Chat ${title}` });
    for (const [label, act] of actions) {
      const button = el("button", { type: "button", role: "menuitem" }, [label]);
      button.addEventListener("click", (event) => {
        event.stopPropagation();
        this.closeMenus();
        act();
      });
      menu.append(el("li", { role: "none" }, [button]));
    }
    menu.addEventListener("keydown", (event) => {
      const items = /** @type {HTMLElement[]} */ (Array.from(menu.querySelectorAll("button")));
      const at = items.indexOf(/** @type {HTMLElement} */ (document.activeElement));
      if (event.key === "Escape") {
        event.preventDefault();
        this.closeMenus();
        opener.focus();
      } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        items[(at + step + items.length) % items.length].focus();
      }
    });
    opener.setAttribute("aria-expanded", "true");
    item.append(menu);
    /** @type {HTMLElement} */ (menu.querySelector("button")).focus();
  }

  /** @param {HTMLElement} item @param {SessionOut} session */
  rename(item, session) {
    const input = /** @type {HTMLInputElement} */ (el("input", { type: "text", class: "rename", "aria-label": "New title", maxlength: "200" }));
    input.value = session.title || "";
    const open = /** @type {HTMLElement} */ (item.querySelector(".open"));
    open.replaceWith(input);
    input.focus();
    input.select();
    let done = false;
    const finish = async (/** @type {boolean} */ save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      if (save && title && title !== session.title) await this.patch(session.id, { title });
      else input.replaceWith(open);
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        finish(true);
      } else if (event.key === "Escape") {
        event.preventDefault();
        finish(false).then(() => open.focus());
      }
    });
    input.addEventListener("blur", () => finish(true));
  }

  /** @param {string} id @param {Record<string, unknown>} changes */
  async patch(id, changes) {
    try {
      await json(`${this.o.base}/sessions/${encodeURIComponent(id)}`, {
        method: "PATCH",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(changes),
      });
    } catch (error) {
      this.o.error(error);
    }
    await this.load();
  }

  /** @param {string} id @param {"json" | "markdown"} format */
  async export(id, format) {
    try {
      const { blob, filename } = await download(`${this.o.base}/sessions/${encodeURIComponent(id)}/export?format=${format}`);
      const link = el("a", { href: URL.createObjectURL(blob), download: filename });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.getAttribute("href") || ""), 10_000);
    } catch (error) {
      this.o.error(error);
    }
  }

  /** Take the chat out of the list now, offer Undo, and delete it when the offer ends. @param {string} id */
  remove(id) {
    const session = this.sessions.find((s) => s.id === id);
    const title = (session && session.title) || "Untitled chat";
    this.pendingDeletes.set(id, window.setTimeout(() => this.reallyDelete(id), UNDO_MS));
    this.o.deleted(id);
    this.render();
    const undo = el("button", { type: "button" }, ["Undo"]);
    const notice = el("div", { class: "toast", role: "status" }, [`Deleted "${title}". `, undo]);
    undo.addEventListener("click", () => {
      clearTimeout(this.pendingDeletes.get(id));
      this.pendingDeletes.delete(id);
      notice.remove();
      this.render();
      this.o.open(id);
    });
    document.body.append(notice);
    setTimeout(() => notice.remove(), UNDO_MS);
    undo.focus();
  }

  /** @param {string} id */
  async reallyDelete(id) {
    this.pendingDeletes.delete(id);
    try {
      await json(`${this.o.base}/sessions/${encodeURIComponent(id)}`, { method: "DELETE" });
    } catch (error) {
      this.o.error(error);
    }
    await this.load();
  }

  async importChosen() {
    const file = this.o.importFile.files ? this.o.importFile.files[0] : null;
    this.o.importFile.value = "";
    if (!file) return;
    try {
      const created = await json(`${this.o.base}/sessions/import`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: await file.text(),
      });
      await this.load();
      this.o.open(created.id);
    } catch (error) {
      this.o.error(error);
    }
  }
}
