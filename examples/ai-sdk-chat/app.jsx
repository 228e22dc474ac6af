// useChat against Iris: the AI SDK's React hook, pointed at /api/agents/<slug>/ui-chat. Text, files
// (images, PDFs, audio: sent as data: URLs), tool approvals, and reload-and-resume.
// Open index.html?iris=<Iris URL>&token=<bearer token>[&agent=<slug>][&model=<provider/modelId>].
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useRef, useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const IRIS = params.get("iris") ?? "http://127.0.0.1:8000";
const headers = { Authorization: `Bearer ${params.get("token") ?? ""}` };
const api = `${IRIS}/api/agents/${params.get("agent") ?? "default"}/ui-chat`;
const body = params.get("model") ? { modelId: params.get("model") } : {};
if (!params.get("chat")) {
  // The chat id is the Iris session: keep it in the URL, so a reload finds the same chat.
  params.set("chat", crypto.randomUUID());
  history.replaceState(null, "", `?${params}`);
}
const chatId = params.get("chat");

function Part({ part, approve }) {
  if (part.type === "text") return <p className="text">{part.text}</p>;
  if (part.type === "reasoning") return <details><summary>Thinking</summary>{part.text}</details>;
  if (part.type === "file") {
    return part.mediaType.startsWith("image/")
      ? <img src={part.url} alt={part.filename ?? "image"} width="160" />
      : <a href={part.url}>{part.filename ?? part.mediaType}</a>;
  }
  if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
    return (
      <div className="tool" data-state={part.state}>
        {part.toolName ?? part.type.slice(5)}: {part.state}
        {part.state === "approval-requested" && (
          <>
            <button onClick={() => approve({ id: part.approval.id, approved: true })}>Approve</button>
            <button onClick={() => approve({ id: part.approval.id, approved: false, reason: "Not now." })}>
              Deny
            </button>
          </>
        )}
      </div>
    );
  }
  return null; // step-start, data-model, data-usage, …
}

function Chat({ initial }) {
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: chatId,
    messages: initial,
    resume: true, // GET …/ui-chat/<id>/stream: an answer still running after a reload goes on
    transport: new DefaultChatTransport({ api, headers, body }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [text, setText] = useState("");
  const files = useRef(null);
  const busy = status === "submitted" || status === "streaming";
  const send = (event) => {
    event.preventDefault();
    sendMessage({ text, files: files.current.files });
    setText("");
    files.current.value = "";
  };
  return (
    <main>
      <ol id="messages">
        {messages.map((message) => (
          <li key={message.id} className={message.role}>
            {message.parts.map((part, index) => (
              <Part key={index} part={part} approve={addToolApprovalResponse} />
            ))}
          </li>
        ))}
      </ol>
      <p id="status">{status}</p>
      {error && <p id="error">{error.message}</p>}
      <form onSubmit={send}>
        <input aria-label="Message" value={text} onChange={(event) => setText(event.target.value)} />
        <input aria-label="Files" type="file" ref={files} multiple accept="image/*,application/pdf,audio/*" />
        <button type="submit" disabled={busy}>Send</button>
      </form>
    </main>
  );
}

// The conversation so far (the active path, URLs signed afresh), then the hook takes over.
const answer = await fetch(`${api}/${chatId}/messages`, { headers });
const initial = answer.ok ? await answer.json() : [];
createRoot(document.getElementById("root")).render(<Chat initial={initial} />);
