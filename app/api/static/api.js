// @ts-check
/** The public JSON API, as any frontend calls it: bearer token, problem+json errors, SSE over fetch. */

/** @typedef {{type: string, [key: string]: any}} AgUiEvent */
/** @typedef {{id: string, name: string, modelId: string, provider: string, type: string, supportsTools: boolean, reasoning?: boolean, pdf?: boolean, audio?: string[]}} AgentModel ``pdf``: reads PDFs natively; ``audio``: the audio types it hears (older servers send neither: then ``type`` says). */
/** @typedef {{acceptedTypes: string[], maxImageBytes: number, maxImagesPerMessage: number, maxDocumentBytes: number, maxDocumentPages: number, maxAudioBytes: number, maxAudioSeconds: number, maxDocumentsPerMessage: number, maxAudioPerMessage: number}} UploadLimits */
/** @typedef {{id: string, url: string, kind: "image" | "document" | "audio", pages: number | null, durationSeconds: number | null, thumbnailUrl: string | null, parts: {chat: ChatPart}}} UploadOut */
/** @typedef {{id: string, title?: string, lastActivityAt: string, modelId?: string, pinned: boolean, archived: boolean}} SessionOut */
/** @typedef {{type: "text", text: string} | {type: "image", image: string, mimeType: string, name: string, expiresAt?: string} | {type: "document", document: string, mimeType: string, name: string, pages?: number, thumbnailUrl?: string, expiresAt?: string} | {type: "audio", audio: string, mimeType: string, name: string, durationSeconds?: number, expiresAt?: string} | {type: "reasoning", text: string, redacted?: boolean}} ChatPart */
/** @typedef {{id: string, role: string, content: string, parts: ChatPart[], createdAt: string, siblings?: string[], siblingIndex?: number, toolCalls?: {id: string, name: string, arguments: string}[], usage?: Record<string, any>, toolCallId?: string, toolOutput?: import("./tools.js").ToolOutput}} ChatMessage */

/** An error the API answered with (problem+json), or a failure to reach it. */
export class ApiError extends Error {
  /**
   * @param {string} detail
   * @param {string} code
   * @param {number} status
   * @param {number | null} [retryAfter] seconds until a refused request may be tried again (429)
   */
  constructor(detail, code, status, retryAfter = null) {
    super(detail);
    this.detail = detail;
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

const TOKEN_KEY = "iris.token";

/** The bearer token, kept in ``localStorage``: every tab shares it (a guest stays the same guest) and it
 * outlives a browser restart, until it expires or the user signs out. */
export function token() {
  return localStorage.getItem(TOKEN_KEY);
}

/** @param {string | null} value */
export function setToken(value) {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

/** The claims of a JWT, unchecked (only the server checks them); null when it is not one. @param {string} value */
export function claimsOf(value) {
  try {
    return JSON.parse(atob(value.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    return null;
  }
}

/** Whether a token's ``exp`` has passed (a token without one never expires here). @param {string} value */
export function expired(value) {
  const claims = claimsOf(value);
  return Boolean(claims && typeof claims.exp === "number" && claims.exp * 1000 <= Date.now());
}

/** @param {Record<string, string>} [extra] */
function headers(extra = {}) {
  const out = { ...extra };
  const bearer = token();
  if (bearer) out.Authorization = `Bearer ${bearer}`;
  return out;
}

/**
 * Seconds until a 429 may be retried: the problem's ``extra.retryAfterSeconds``, else ``Retry-After``.
 * @param {any} body @param {string | null} header
 */
function retryAfterOf(body, header) {
  const fromBody = body && body.extra && Number(body.extra.retryAfterSeconds);
  if (fromBody && Number.isFinite(fromBody)) return fromBody;
  const fromHeader = header === null ? NaN : Number(header);
  return Number.isFinite(fromHeader) ? fromHeader : null;
}

/** @param {Response} response */
async function problem(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    return new ApiError(
      body.detail || body.title || text,
      body.code || `http_${response.status}`,
      response.status,
      retryAfterOf(body, response.headers.get("Retry-After")),
    );
  } catch {
    return new ApiError(text || response.statusText, `http_${response.status}`, response.status);
  }
}

/**
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<Response>}
 */
async function call(path, init = {}) {
  let response;
  try {
    response = await fetch(path, { ...init, headers: headers(/** @type {Record<string, string>} */ (init.headers || {})) });
  } catch (error) {
    throw new ApiError(`Iris could not be reached (${error}).`, "network_error", 0);
  }
  if (!response.ok) throw await problem(response);
  return response;
}

/**
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<any>}
 */
export async function json(path, init) {
  const response = await call(path, init);
  return response.status === 204 ? null : response.json();
}

/**
 * POST a JSON body and return the streaming response.
 * @param {string} path
 * @param {unknown} body
 */
export function postStream(path, body) {
  return call(path, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
  });
}

/**
 * GET a stream to re-attach to; ``null`` when nothing runs (204).
 * @param {string} path
 * @param {string | null} lastEventId
 */
export async function getStream(path, lastEventId) {
  const response = await call(path, {
    headers: lastEventId ? { "Last-Event-ID": lastEventId, Accept: "text/event-stream" } : { Accept: "text/event-stream" },
  });
  return response.status === 204 ? null : response;
}

/**
 * The events of an SSE body, with their ``id:``; comments (``: ping``) are skipped.
 * @param {Response} response
 * @returns {AsyncGenerator<{id: string | null, event: AgUiEvent}>}
 */
export async function* events(response) {
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = null;
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { id, event: JSON.parse(data.join("\n")) };
    }
  }
}

/**
 * Upload one image, PDF or audio file with progress (fetch cannot report upload progress; XMLHttpRequest can).
 * @param {File} file
 * @param {string} threadId
 * @param {(fraction: number) => void} onProgress
 * @returns {Promise<UploadOut>}
 */
export function upload(file, threadId, onProgress) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    form.append("threadId", threadId);
    form.append("file", file, file.name || "pasted-file");
    const request = new XMLHttpRequest();
    request.open("POST", "/api/files");
    const bearer = token();
    if (bearer) request.setRequestHeader("Authorization", `Bearer ${bearer}`);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    request.onerror = () => reject(new ApiError("The upload could not reach Iris.", "network_error", 0));
    request.onload = () => {
      let body = null;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = null;
      }
      if (request.status === 201 && body) resolve(body);
      else
        reject(
          new ApiError(
            (body && (body.detail || body.title)) || request.statusText,
            (body && body.code) || `http_${request.status}`,
            request.status,
            retryAfterOf(body, request.getResponseHeader("Retry-After")),
          ),
        );
    };
    request.send(form);
  });
}

/** A random UUID, also outside secure contexts (where crypto.randomUUID is missing). */
export function uuid4() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * GET a file the API answers as an attachment (an export), with the name it suggests.
 * @param {string} path
 * @returns {Promise<{blob: Blob, filename: string}>}
 */
export async function download(path) {
  const response = await call(path);
  const disposition = response.headers.get("Content-Disposition") || "";
  const named = disposition.match(/filename="([^"]+)"/);
  return { blob: await response.blob(), filename: named ? named[1] : "download" };
}
