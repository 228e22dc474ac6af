// @ts-check
/** Tool calls on the chat page: the call, what it answered, and the images, audio and links it returned
 * (from the live `TOOL_CALL_RESULT` event or from history's `toolOutput`, whose media URLs are fresh). */

/** @typedef {{type: string, text?: string, url?: string, mimeType?: string, name?: string, uri?: string, description?: string, width?: number, height?: number, value?: unknown}} ToolContent */
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
 * What a tool returned to look at: its images (`onImage` opens one large), audio clips, links.
 * @param {ToolContent[]} content
 * @param {(url: string, name: string) => void} onImage
 */
function media(content, onImage) {
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
  for (const part of content) {
    if (part.type === "audio" && part.url) {
      out.push(el("audio", { controls: "", src: part.url, "aria-label": "Audio the tool returned" }));
    } else if (part.type === "resource_link" && part.uri) {
      out.push(el("a", { href: part.uri, rel: "noopener noreferrer", target: "_blank" }, [part.name || part.uri]));
    }
  }
  return out;
}

/**
 * One tool call: `name(args)`, its summary ("running…" until it answers), and its media.
 * @param {ToolView} tool
 * @param {(url: string, name: string) => void} onImage
 */
export function toolCard(tool, onImage) {
  const failed = tool.output && tool.output.status !== "succeeded";
  const summary = el("div", { class: `tool-summary${failed ? " failed" : ""}` }, [
    tool.summary === undefined ? "running…" : tool.summary,
  ]);
  return el("div", { class: "tool-call", "aria-label": `Tool call ${tool.name}` }, [
    el("div", {}, [`${tool.name}(${tool.args})`]),
    summary,
    ...(tool.output && tool.output.content ? media(tool.output.content, onImage) : []),
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
