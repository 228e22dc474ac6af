// @ts-check
/** The image preview: an image shown large in a modal dialog. The keyboard stays inside it (Tab cycles
 * its controls) and Esc, Close or a click beside the image gives focus back to what opened it. */
import { $, ui } from "./page.js";

/** What had focus before the preview opened. @type {HTMLElement | null} */
let opener = null;

/** @param {string} url @param {string} name */
export function openPreview(url, name) {
  opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  ui.previewImage.src = url;
  ui.previewImage.alt = name;
  ui.preview.hidden = false;
  document.body.setAttribute("data-modal", "preview");
  for (const region of document.querySelectorAll("body > header, body > .layout")) region.setAttribute("inert", "");
  $("preview-close").focus();
}

export function closePreview() {
  if (ui.preview.hidden) return;
  ui.preview.hidden = true;
  ui.previewImage.removeAttribute("src");
  document.body.removeAttribute("data-modal");
  for (const region of document.querySelectorAll("[inert]")) region.removeAttribute("inert");
  if (opener && opener.isConnected) opener.focus();
  opener = null;
}

$("preview-close").addEventListener("click", closePreview);
ui.preview.addEventListener("click", (event) => {
  if (event.target === ui.preview) closePreview();
});
document.addEventListener("keydown", (event) => {
  if (ui.preview.hidden) return;
  if (event.key === "Escape") {
    event.preventDefault();
    closePreview();
  } else if (event.key === "Tab") {
    // One control inside: the keyboard stays on it.
    event.preventDefault();
    $("preview-close").focus();
  }
});
