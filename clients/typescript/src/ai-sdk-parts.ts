// The Vercel AI SDK's UIMessages as Logbook messages and back (README,
// "Mapping AI SDK chats"). The SDK is only a type here.
//
// One UIMessage is one Logbook message, or, for an assistant's steps with
// tool calls, several: a content part that follows a tool part starts a new
// assistant message, and each tool part with a result adds a `tool` message
// after the assistant message that called it, so that other runtimes (and
// resume) read ordinary calls and results. The first message carries the
// UIMessage's id as its client_id, the others `<id>#1`, `<id>#2` …, which
// is how a read groups them again. Every part keeps what its typed fields
// have no place for (state, providerMetadata, the order of its keys) in
// provider_data, so that it comes back exactly as it was saved.

import type { UIMessage } from "ai";
import type { Message, MessageInput, Part, ToolCallInput } from "./types.js";

type Json = Record<string, unknown>;
type UIPart = UIMessage["parts"][number];

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The provider_data marker of a part stored whole, in a data part's value. */
const WHOLE = "ai-sdk-part";

/**
 * What a part's typed fields (captured) leave, for provider_data: the part
 * without them (`ui`), and its key order (`keys`) when it is not the usual
 * one (the kind's usual keys, then the others as they came). undefined when
 * nothing is left.
 */
function aside(part: Json, captured: string[], usual: string[]): Json | undefined {
  const rest: Json = {};
  for (const [k, v] of Object.entries(part)) if (!captured.includes(k)) rest[k] = v;
  const keys = Object.keys(part);
  const inOrder = keys.join("\u0000") === usualOrder(usual, part, rest).join("\u0000");
  if (Object.keys(rest).length === 0 && inOrder) return undefined;
  return { ui: rest, ...(inOrder ? {} : { keys }) };
}

function usualOrder(usual: string[], typed: Json, kept: Json): string[] {
  return [...usual.filter((k) => k in typed || k in kept), ...Object.keys(kept).filter((k) => !usual.includes(k))];
}

/** A part rebuilt from its typed values and what was kept aside, in its own key order. */
function rebuild(typed: Json, pd: unknown, usual: string[]): Json {
  const kept = isObject(pd) && isObject(pd.ui) ? pd.ui : {};
  const keys = isObject(pd) && Array.isArray(pd.keys) ? (pd.keys as string[]) : usualOrder(usual, typed, kept);
  const out: Json = {};
  for (const k of keys) {
    if (k in typed) out[k] = typed[k];
    else if (k in kept) out[k] = kept[k];
  }
  return out;
}

function whole(part: UIPart): Part {
  return { type: "data", name: part.type, value: part as unknown as Part["value"], provider_data: { [WHOLE]: true } };
}

function validURL(u: unknown): u is string {
  return typeof u === "string" && /^(https?:|data:)/i.test(u);
}

function fullMediaType(t: unknown): t is string {
  return typeof t === "string" && /^[\w.+-]+\/[\w.+-]+$/.test(t) && t.length <= 255;
}

const TEXT_KEYS = ["type", "text"];
const FILE_KEYS = ["type", "mediaType", "filename", "url"];
const DATA_KEYS = ["type", "id", "data"];

/** One content part (not a tool part) as a Logbook part. */
function partIn(p: UIPart, role: UIMessage["role"]): Part {
  const part = p as unknown as Json;
  switch (p.type) {
    case "text": {
      if (typeof p.text !== "string") return whole(p);
      const out: Part = { type: "text", text: p.text };
      const pd = aside(part, TEXT_KEYS, TEXT_KEYS);
      return pd ? { ...out, provider_data: pd } : out;
    }
    case "reasoning": {
      if (role !== "assistant" || typeof p.text !== "string") return whole(p);
      const out: Part = { type: "reasoning", text: p.text };
      const pd = aside(part, TEXT_KEYS, TEXT_KEYS);
      return pd ? { ...out, provider_data: pd } : out;
    }
    case "file": {
      if (!validURL(p.url)) return whole(p);
      const image = typeof p.mediaType === "string" && p.mediaType.startsWith("image");
      if (!image && "filename" in p && !(typeof p.filename === "string" && p.filename.length <= 1024)) return whole(p);
      const captured = ["type", "url", ...(fullMediaType(p.mediaType) ? ["mediaType"] : []), ...(!image && "filename" in p ? ["filename"] : [])];
      const out: Part = { type: image ? "image" : "file", url: p.url };
      if (fullMediaType(p.mediaType)) out.media_type = p.mediaType;
      if (!image && typeof p.filename === "string") out.filename = p.filename;
      const pd = aside(part, captured, FILE_KEYS);
      return pd ? { ...out, provider_data: pd } : out;
    }
  }
  if (p.type.startsWith("data-") && p.type.length > 5 && p.type.length <= 261 && "data" in part) {
    const out: Part = { type: "data", name: p.type.slice(5), value: (part.data ?? null) as Part["value"] };
    const pd = aside(part, ["type", "data"], DATA_KEYS);
    return pd ? { ...out, provider_data: pd } : out;
  }
  return whole(p); // source-url, source-document, step-start, custom, reasoning-file, steering-message, and what comes next
}

function isToolPart(p: UIPart): p is Extract<UIPart, { toolCallId: string }> {
  return p.type === "dynamic-tool" || p.type.startsWith("tool-");
}

/** The keys of a tool part that the call and its result hold. */
const TOOL_TYPED = ["type", "toolName", "toolCallId", "input", "output", "errorText"];

function toolName(p: Json): string {
  return p.type === "dynamic-tool" ? String(p.toolName) : String(p.type).slice(5);
}

function hasResult(p: Json): boolean {
  return p.state === "output-available" || p.state === "output-error" || p.state === "output-denied";
}

/** A tool part as a call (and its result), or undefined when a call cannot hold it. */
function callIn(p: UIPart): { call: ToolCallInput; result?: MessageInput } | undefined {
  const part = p as unknown as Json;
  const name = toolName(part);
  const id = part.toolCallId;
  if (typeof id !== "string" || id === "" || id.length > 256 || name === "" || name.length > 256) return undefined;
  const rest: Json = {};
  for (const [k, v] of Object.entries(part)) if (!TOOL_TYPED.includes(k)) rest[k] = v;
  const call: ToolCallInput = {
    id,
    name,
    arguments: JSON.stringify(part.input ?? null),
    provider_data: { ui: rest, keys: Object.keys(part) },
  };
  if (!hasResult(part)) {
    // Its result comes from the client (a tool without execute, an
    // approval): resume does not count it as unanswered.
    call.client_side = true;
    return { call };
  }
  const result: MessageInput = { role: "tool", tool_call_id: id, name };
  if (part.state === "output-available") result.content = [{ type: "json", value: (part.output ?? null) as Part["value"] }];
  else {
    result.is_error = true;
    result.content = typeof part.errorText === "string" ? part.errorText : "";
  }
  return { call, result };
}

/**
 * The Logbook messages that store one UIMessage, in order. With opaque, one
 * message holding every part whole (for a UIMessage whose typed form the
 * server refused).
 */
export function uiToMessages(ui: UIMessage, opaque = false): MessageInput[] {
  const role = ui.role;
  const envelope = messageEnvelope(ui);
  if (opaque) return [{ role, client_id: ui.id, content: ui.parts.map(whole), ...envelope }];
  const out: MessageInput[] = [];
  let parts: Part[] = [];
  let calls: ToolCallInput[] = [];
  let results: MessageInput[] = [];
  const flush = () => {
    const first = out.length === 0;
    const m: MessageInput = { role, client_id: first ? ui.id : `${ui.id}#${out.length}`, content: parts };
    if (calls.length > 0) m.tool_calls = calls;
    if (first) Object.assign(m, envelope);
    out.push(m);
    for (const r of results) out.push({ ...r, client_id: `${ui.id}#${out.length}` });
    parts = [];
    calls = [];
    results = [];
  };
  for (const p of ui.parts) {
    if (role === "assistant" && isToolPart(p)) {
      const c = callIn(p);
      if (c) {
        calls.push(c.call);
        if (c.result) results.push(c.result);
        continue;
      }
    }
    if (calls.length > 0) flush(); // a part after a call starts the next message, so the order holds
    parts.push(isToolPart(p) ? whole(p) : partIn(p, role));
  }
  if (parts.length > 0 || calls.length > 0 || out.length === 0) flush();
  return out;
}

/** What a UIMessage holds besides id, role and parts: metadata (an object as Logbook metadata, else in provider_item), other keys, key order. */
function messageEnvelope(ui: UIMessage): Partial<MessageInput> {
  const u = ui as unknown as Json;
  const keys = Object.keys(u);
  const extra: Json = {};
  for (const k of keys) if (!["id", "role", "parts", "metadata"].includes(k)) extra[k] = u[k];
  const out: Partial<MessageInput> = {};
  const item: Json = {};
  if ("metadata" in u) {
    if (isObject(u.metadata)) out.metadata = u.metadata;
    else item.metadata = u.metadata;
  }
  const usual = ["id", "role", ...("metadata" in u ? ["metadata"] : []), "parts"];
  if (Object.keys(extra).length > 0) item.extra = extra;
  if (keys.join() !== usual.join()) item.keys = keys;
  if ("metadata" in u && isObject(u.metadata)) item.metadata_is_object = true;
  if (Object.keys(item).length > 0 || "metadata" in u) out.provider_item = { type: "ui-message", ...item };
  return out;
}

// --- messages to UIMessages --------------------------------------------------

function partOut(p: Part): Json {
  const pd = p.provider_data;
  if (p.type === "data" && isObject(pd) && pd[WHOLE] === true) return p.value as Json;
  switch (p.type) {
    case "text":
    case "refusal":
      return rebuild({ type: "text", text: p.text ?? "" }, pd, TEXT_KEYS);
    case "reasoning":
      return rebuild({ type: "reasoning", text: p.text ?? (p.summary ?? []).join("\n") }, pd, TEXT_KEYS);
    case "image":
    case "file": {
      const typed: Json = { type: "file", url: p.url ?? (p.file_id ? `/v1/files/${p.file_id}` : "") };
      const kept = isObject(pd) && isObject(pd.ui) ? pd.ui : {};
      if (!("mediaType" in kept)) typed.mediaType = p.media_type ?? (p.type === "image" ? "image" : "application/octet-stream");
      if (p.filename !== undefined) typed.filename = p.filename;
      return rebuild(typed, pd, FILE_KEYS);
    }
    case "data":
      return rebuild({ type: `data-${p.name}`, data: p.value ?? null }, pd, DATA_KEYS);
  }
  return { type: "data-logbook", data: p };
}

function toolOut(call: NonNullable<Message["tool_calls"]>[number], result: Message | undefined): Json {
  const pd = call.provider_data;
  let input: unknown;
  try {
    input = JSON.parse(call.arguments);
  } catch {
    input = call.arguments;
  }
  let output: unknown;
  let errorText: string | undefined;
  if (result) {
    const c = result.content;
    if (result.is_error) errorText = typeof c === "string" ? c : "";
    else if (Array.isArray(c) && c.length === 1 && c[0]!.type === "json") output = c[0]!.value ?? null;
    else output = typeof c === "string" ? c : c.map((x) => x.text ?? "").join("");
  }
  if (isObject(pd) && Array.isArray(pd.keys) && isObject(pd.ui)) {
    const keys = pd.keys as string[];
    const dynamic = keys.includes("toolName");
    const typed: Json = { type: dynamic ? "dynamic-tool" : `tool-${call.name}`, toolCallId: call.id };
    if (dynamic) typed.toolName = call.name;
    if (keys.includes("input")) typed.input = input;
    if (keys.includes("output")) typed.output = output;
    if (keys.includes("errorText")) typed.errorText = errorText ?? "";
    return rebuild(typed, pd, TOOL_TYPED);
  }
  // A call another runtime stored.
  const out: Json = { type: `tool-${call.name}`, toolCallId: call.id };
  if (!result) Object.assign(out, { state: "input-available", input });
  else if (result.is_error) Object.assign(out, { state: "output-error", input, errorText });
  else Object.assign(out, { state: "output-available", input, output });
  return out;
}

/** Groups a chat's stored messages into UIMessages, in order. */
export function messagesToUI(messages: Message[]): UIMessage[] {
  const groups: { id: string; msgs: Message[] }[] = [];
  for (const m of messages) {
    const g = groups.at(-1);
    if (g && m.client_id === `${g.id}#${g.msgs.length}`) {
      g.msgs.push(m);
      continue;
    }
    if (g && m.client_id === null && m.role === "tool" && g.msgs.some((x) => x.tool_calls?.some((c) => c.id === m.tool_call_id))) {
      g.msgs.push(m); // another runtime's result for this message's call
      continue;
    }
    groups.push({ id: m.client_id ?? m.id, msgs: [m] });
  }
  return groups.map(groupToUI);
}

function groupToUI(g: { id: string; msgs: Message[] }): UIMessage {
  const first = g.msgs[0]!;
  const role: UIMessage["role"] = first.role === "user" || first.role === "system" ? first.role : first.role === "developer" ? "system" : "assistant";
  const results = new Map<string, Message>();
  for (const m of g.msgs) if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  const parts: Json[] = [];
  for (const m of g.msgs) {
    if (m.role === "tool" && results.get(m.tool_call_id ?? "") === m && g.msgs.some((x) => x.tool_calls?.some((c) => c.id === m.tool_call_id))) continue;
    if (typeof m.content === "string") {
      if (m.content !== "" || m.role === "tool") parts.push({ type: "text", text: m.content });
    } else for (const p of m.content) parts.push(partOut(p));
    for (const c of m.tool_calls ?? []) parts.push(toolOut(c, results.get(c.id)));
  }
  const out: Json = { id: g.id, role, parts };
  const item = isObject(first.provider_item) && first.provider_item.type === "ui-message" ? first.provider_item : undefined;
  const meta = first.metadata as Json;
  if (item?.metadata_is_object) out.metadata = meta;
  else if (item && "metadata" in item) out.metadata = item.metadata;
  else if (!item && isObject(meta) && Object.keys(meta).length > 0) out.metadata = meta;
  if (item && isObject(item.extra)) Object.assign(out, item.extra);
  if (item && Array.isArray(item.keys)) {
    const ordered: Json = {};
    for (const k of item.keys as string[]) if (k in out) ordered[k] = out[k];
    return ordered as unknown as UIMessage;
  }
  return (out.metadata === undefined ? { id: out.id, role: out.role, parts: out.parts } : { id: out.id, role: out.role, metadata: out.metadata, parts: out.parts }) as UIMessage;
}
