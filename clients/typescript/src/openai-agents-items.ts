// The OpenAI Agents SDK's items as Logbook messages and back (README,
// "Mapping OpenAI and Anthropic histories"). The SDK is only a type here.

import type { AgentInputItem } from "@openai/agents";
import type { Message, MessageInput, Part } from "./types.js";

export type Json = Record<string, unknown>;

const MESSAGE_ROLES = new Set(["user", "assistant", "system", "developer"]);

export function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** An http(s) or data: URL, the only kind a part's `url` takes. */
function url(v: unknown): string | undefined {
  return typeof v === "string" && /^(https?:|data:)/i.test(v) ? v : undefined;
}

function validCallId(v: unknown): v is string {
  return typeof v === "string" && v.length > 0 && v.length <= 256;
}

/** A file in OpenAI's own store (`{id: "file-…"}`), which a part names in `provider_data.file_id`. */
function providerFile(v: unknown): string | undefined {
  return isObject(v) && typeof v.id === "string" && v.id !== "" ? v.id : undefined;
}

// --- items to messages ----------------------------------------------------------

/** The SDK's content parts as Logbook parts; those Logbook has no typed place for (audio) are left to the whole item. */
function partsIn(content: unknown[], role: string): Part[] {
  const parts: Part[] = [];
  for (const p of content) {
    if (!isObject(p)) continue;
    switch (p.type) {
      case "input_text":
      case "output_text":
      case "text":
        if (typeof p.text === "string") parts.push({ type: "text", text: p.text });
        break;
      case "refusal":
        if (role === "assistant" && typeof p.refusal === "string") parts.push({ type: "refusal", text: p.refusal });
        break;
      case "input_image":
      case "image": {
        if (role === "assistant") break;
        const image = p.image;
        const u = url(image) ?? (isObject(image) ? url(image.url) : undefined);
        const id = providerFile(image);
        if (!u && !id) break;
        const part: Part = u ? { type: "image", url: u } : { type: "image", provider_data: { file_id: id } };
        const detail = str(p.detail);
        if (detail && detail.length <= 32) part.detail = detail;
        parts.push(part);
        break;
      }
      case "input_file":
      case "file": {
        if (role === "assistant") break;
        const file = p.file;
        const u = url(file) ?? (isObject(file) ? url(file.url) : undefined);
        const id = providerFile(file);
        if (!u && !id) break;
        const part: Part = u ? { type: "file", url: u } : { type: "file", provider_data: { file_id: id } };
        const name = str(p.filename) ?? (isObject(file) ? str(file.filename) : undefined);
        if (name && name.length <= 1024) part.filename = name;
        parts.push(part);
        break;
      }
    }
  }
  return parts;
}

/** The typed fields README's "OpenAI Responses" table gives an item, or undefined when it has no place for it. */
function typed(item: Json): MessageInput | undefined {
  const type = item.type;
  const role = item.role;
  if ((type === undefined || type === "message") && typeof role === "string" && MESSAGE_ROLES.has(role)) {
    const r = role as MessageInput["role"];
    if (typeof item.content === "string") return { role: r, content: item.content };
    if (Array.isArray(item.content)) {
      const parts = partsIn(item.content, r);
      return { role: r, content: parts.length > 0 ? parts : "" };
    }
    return undefined;
  }
  if (type === "function_call") {
    const { callId, name, arguments: args } = item;
    if (!validCallId(callId) || typeof name !== "string" || name.length === 0 || name.length > 256) return undefined;
    if (typeof args !== "string") return undefined;
    try {
      JSON.parse(args); // the server stores only arguments that are JSON
    } catch {
      return undefined;
    }
    return { role: "assistant", content: "", tool_calls: [{ id: callId, name, arguments: args }] };
  }
  if (type === "function_call_result") {
    if (!validCallId(item.callId)) return undefined;
    const msg: MessageInput = { role: "tool", tool_call_id: item.callId, content: "" };
    if (typeof item.name === "string" && item.name) msg.name = item.name;
    const out = item.output;
    if (typeof out === "string") msg.content = out;
    else if (isObject(out) && out.type === "text" && typeof out.text === "string") msg.content = out.text;
    else if (isObject(out)) msg.content = partsIn([out], "tool");
    else if (Array.isArray(out)) msg.content = partsIn(out, "tool");
    return msg;
  }
  if (type === "reasoning") {
    const part: Part = { type: "reasoning", summary: [] };
    for (const c of Array.isArray(item.content) ? item.content : []) {
      if (isObject(c) && typeof c.text === "string") part.summary!.push(c.text);
    }
    const raw = Array.isArray(item.rawContent) ? item.rawContent : [];
    if (raw.length === 1 && isObject(raw[0]) && typeof raw[0].text === "string") part.text = raw[0].text;
    const enc = isObject(item.providerData) ? str(item.providerData.encryptedContent ?? item.providerData.encrypted_content) : undefined;
    if (enc) part.encrypted_content = enc;
    return { role: "assistant", content: [part] };
  }
  return undefined; // hosted tool calls, computer and shell calls, compaction, unknown items
}

/** An item as JSON gives it back (so that what is stored is what is read). */
export function asJson(item: unknown): Json {
  return JSON.parse(JSON.stringify(item)) as Json;
}

export function untyped(item: Json): MessageInput {
  return { role: "assistant", content: "", provider_item: item };
}

// An item keeps its large data: URLs once, in the typed part (which the server
// stores as a file): in provider_item each is a reference to its part.
const REF = /^logbook:content\[(\d+)\]\.url$/;
const INLINE_MIN = 1024;

function anyString(v: unknown, test: (s: string) => boolean): boolean {
  if (typeof v === "string") return test(v);
  if (Array.isArray(v)) return v.some((x) => anyString(x, test));
  if (isObject(v)) return Object.values(v).some((x) => anyString(x, test));
  return false;
}

function mapStrings(v: unknown, f: (s: string) => string): unknown {
  if (typeof v === "string") return f(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, f));
  if (isObject(v)) {
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) out[k] = mapStrings(x, f);
    return out;
  }
  return v;
}

/** The item with each large data: URL a typed part holds replaced by a reference to that part. */
function withoutInline(item: Json, msg: MessageInput): Json {
  if (!Array.isArray(msg.content)) return item;
  const at = new Map<string, number>();
  msg.content.forEach((p, i) => {
    if (p.url && p.url.startsWith("data:") && p.url.length >= INLINE_MIN && !at.has(p.url)) at.set(p.url, i);
  });
  if (at.size === 0 || anyString(item, (s) => REF.test(s))) return item; // a reference would be ambiguous: keep it whole
  return mapStrings(item, (s) => (at.has(s) ? `logbook:content[${at.get(s)}].url` : s)) as Json;
}

/** The item a message's provider_item stands for, its references put back. */
function withInline(pi: Json, content: Message["content"]): Json {
  if (typeof content === "string" || !anyString(pi, (s) => REF.test(s))) return pi;
  return mapStrings(pi, (s) => {
    const m = REF.exec(s);
    const u = m ? content[Number(m[1])]?.url : undefined;
    return u ?? s;
  }) as Json;
}

/**
 * The message that stores one SDK item: the typed fields README's mapping
 * table has a place for (role, content as text or parts, tool calls, tool
 * results, reasoning), and the item in `provider_item`, its large data:
 * URLs held only by the typed parts. An item the table has no place for is an
 * assistant message with empty content and the item.
 */
export function itemToMessage(item: AgentInputItem, clientId?: string): MessageInput {
  const whole = asJson(item);
  const msg = typed(whole);
  const out = msg ? { ...msg, provider_item: withoutInline(whole, msg) } : untyped(whole);
  if (clientId !== undefined) out.client_id = clientId;
  return out;
}

// --- messages to items ---------------------------------------------------------

function partsOut(content: Message["content"], role: string): unknown[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: role === "assistant" ? "output_text" : "input_text", text: content }];
  const out: unknown[] = [];
  for (const p of content) {
    const pf = isObject(p.provider_data) ? str(p.provider_data.file_id) : undefined;
    if (p.type === "text") out.push({ type: role === "assistant" ? "output_text" : "input_text", text: p.text ?? "" });
    else if (p.type === "refusal") out.push({ type: "refusal", refusal: p.text ?? "" });
    else if (p.type === "image" && (p.url || pf)) out.push({ type: "input_image", image: p.url ?? { id: pf }, ...(p.detail ? { detail: p.detail } : {}) });
    else if (p.type === "file" && (p.url || pf)) out.push({ type: "input_file", file: p.url ?? { id: pf }, ...(p.filename ? { filename: p.filename } : {}) });
  }
  return out;
}

function textOf(content: Message["content"]): string {
  return typeof content === "string" ? content : content.map((p) => (p.type === "text" ? (p.text ?? "") : "")).join("");
}

/**
 * The SDK items a stored message stands for: its `provider_item` when that
 * is a whole item (it has `type` or `role`), else an item made by README's
 * rules from the typed fields (a message another runtime wrote): a `tool`
 * message is a `function_call_result`, each tool call a `function_call`, a
 * lone reasoning part a `reasoning` item, anything else a message.
 */
export function messageToItems(m: Message): AgentInputItem[] {
  const pi = m.provider_item;
  if (isObject(pi) && ("type" in pi || "role" in pi)) return [withInline(pi, m.content) as unknown as AgentInputItem];
  const items: Json[] = [];
  if (m.role === "tool") {
    const output = typeof m.content === "string" ? m.content : partsOut(m.content, "tool");
    items.push({ type: "function_call_result", callId: m.tool_call_id ?? "", name: m.name ?? "", status: "completed", output });
  } else if (m.tool_calls && m.tool_calls.length > 0) {
    if (textOf(m.content) !== "") items.push({ type: "message", role: "assistant", status: "completed", content: partsOut(m.content, "assistant") });
    for (const c of m.tool_calls) {
      items.push({ type: "function_call", callId: c.id, name: c.name, arguments: c.arguments, status: "completed" });
    }
  } else if (Array.isArray(m.content) && m.content.length === 1 && m.content[0]!.type === "reasoning") {
    const p = m.content[0]!;
    const item: Json = { type: "reasoning", content: (p.summary ?? []).map((text) => ({ type: "input_text", text })) };
    if (p.text !== undefined) item.rawContent = [{ type: "reasoning_text", text: p.text }];
    if (p.encrypted_content) item.providerData = { encryptedContent: p.encrypted_content };
    items.push(item);
  } else if (m.role === "assistant") {
    items.push({ type: "message", role: "assistant", status: "completed", content: partsOut(m.content, "assistant") });
  } else if (m.role === "user") {
    items.push({ type: "message", role: "user", content: typeof m.content === "string" ? m.content : partsOut(m.content, "user") });
  } else {
    items.push({ type: "message", role: "system", content: textOf(m.content) }); // the SDK has no developer role
  }
  if (isObject(pi) && typeof pi.id === "string" && items.length === 1) items[0]!.id = pi.id;
  return items as unknown as AgentInputItem[];
}

/** JSON with every object's keys sorted: the SDK compares items by structure, not key order. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
