// @ts-check
/** Tool calls on the chat page: the call, what it answered, and the images, audio and links it returned
 * (from the live `TOOL_CALL_RESULT` event or from history's `toolOutput`, whose media URLs are fresh);
 * a resource link of a stored tool message can be read on request. */

/** @typedef {{type: string, text?: string, url?: string, mimeType?: string, name?: string, uri?: string, description?: string, width?: number, height?: number, value?: unknown, server?: string, readAt?: string}} ToolContent */
/** @typedef {(index: number) => Promise<ToolContent>} ReadLink reads the resource link at this index of the output's content */
/** @typedef {{toolName: string, status: string, resultSummary: string, error?: string, content?: ToolContent[]}} ToolOutput */
/** @typedef {{name: string, args: string, summary?: string, output?: ToolOutput}} ToolView */

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

/**
 * What was read of a resource link: its text, its image, or its file to open.
 * @param {ToolContent} part
 */
function readView(part) {
  const name = part.name || part.uri || "resource";
  if (typeof part.text === "string") return el("pre", { class: "resource-text", "aria-label": `Contents of ${name}` }, [part.text]);
  if (part.url && (part.mimeType || "").startsWith("image/")) return el("img", { src: part.url, alt: name });
  if (part.url) return el("a", { href: part.url, rel: "noopener noreferrer", target: "_blank" }, [`Open ${name}`]);
  return el("span", {}, ["(nothing)"]);
}

/**
 * A resource link: a web address opens in a new tab; a server's resource shows what was read of it, or
 * a Read button when `onRead` can read it (history's cards).
 * @param {ToolContent} part
 * @param {number} index its position in the output's content
 * @param {ReadLink} [onRead]
 */
function linkView(part, index, onRead) {
  const name = part.name || String(part.uri);
  if (/^https?:/i.test(String(part.uri))) {
    return el("a", { href: String(part.uri), rel: "noopener noreferrer", target: "_blank" }, [name]);
  }
  const box = el("div", { class: "resource-link" }, [el("span", { title: String(part.uri) }, [name])]);
  if (part.readAt) {
    box.append(readView(part));
  } else if (onRead && part.server) {
    const button = el("button", { type: "button", "aria-label": `Read ${name}` }, ["Read"]);
    button.addEventListener("click", async () => {
      /** @type {HTMLButtonElement} */ (button).disabled = true;
      try {
        button.replaceWith(readView(await onRead(index)));
      } catch (error) {
        const said = error instanceof Error ? error.message : String(error);
        button.replaceWith(el("span", { class: "tool-summary failed", role: "status" }, [`Not read: ${said}`]));
      }
    });
    box.append(button);
  }
  return box;
}

/**
 * What a tool returned to look at: its images (`onImage` opens one large), audio clips, links.
 * @param {ToolContent[]} content
 * @param {(url: string, name: string) => void} onImage
 * @param {ReadLink} [onRead]
 */
function media(content, onImage, onRead) {
  const out = [];
  const images = content.filter((part) => part.type === "image" && part.url);
  if (images.length) {
    out.push(
      el(
        "div",
        { class: "images tool-images" },
        images.map((part, index) => {
          const name = `${part.name || "tool image"} ${index + 1}`;
          const button = el("button", { type: "button", "aria-label": `Enlarge tool image ${index + 1}` }, [
            el("img", { src: String(part.url), alt: name }),
          ]);
          button.addEventListener("click", () => onImage(String(part.url), name));
          return button;
        }),
      ),
    );
  }
  content.forEach((part, index) => {
    if (part.type === "audio" && part.url) {
      out.push(el("audio", { controls: "", src: part.url, "aria-label": "Audio the tool returned" }));
    } else if (part.type === "resource_link" && part.uri) {
      out.push(linkView(part, index, onRead));
    }
  });
  return out;
}

/**
 * One tool call: `name(args)`, its summary ("running…" until it answers), and its media.
 * @param {ToolView} tool
 * @param {(url: string, name: string) => void} onImage
 * @param {ReadLink} [onRead] reads one of its resource links (a stored tool message's card)
 */
export function toolCard(tool, onImage, onRead) {
  const failed = tool.output && tool.output.status !== "succeeded";
  const summary = el("div", { class: `tool-summary${failed ? " failed" : ""}` }, [
    tool.summary === undefined ? "running…" : tool.summary,
  ]);
  return el("div", { class: "tool-call", "aria-label": `Tool call ${tool.name}` }, [
    el("div", {}, [`${tool.name}(${tool.args})`]),
    summary,
    ...(tool.output && tool.output.content ? media(tool.output.content, onImage, onRead) : []),
  ]);
}

/**
 * A tool message of history as a card: its output, and the arguments of the call it answers.
 * @param {{content: string, toolCallId?: string, toolOutput?: ToolOutput}} message
 * @param {Map<string, {name: string, arguments: string}>} calls the history's tool calls by id
 * @returns {ToolView}
 */
export function historyTool(message, calls) {
  const call = message.toolCallId ? calls.get(message.toolCallId) : undefined;
  const output = message.toolOutput;
  return {
    name: output ? output.toolName : call ? call.name : "tool",
    args: call ? call.arguments : "",
    summary: output ? output.resultSummary : message.content,
    output,
  };
}

/**
 * Every tool call the history's assistant messages made, by id.
 * @param {{toolCalls?: {id: string, name: string, arguments: string}[]}[]} messages
 */
export function callsById(messages) {
  const calls = new Map();
  for (const message of messages) for (const call of message.toolCalls || []) calls.set(call.id, call);
  return calls;
}
