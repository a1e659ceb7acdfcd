// A chat store for the Vercel AI SDK (`ai`): useChat / streamText chats kept
// as Logbook sessions. The SDK is only a type here: this module imports
// nothing from it at run time.

import type { UIMessage } from "ai";
import { Client } from "./client.js";
import { Problem } from "./errors.js";
import { messagesToUI, uiToMessages } from "./ai-sdk-parts.js";
import type { Message, MessageInput } from "./types.js";

export { messagesToUI, uiToMessages } from "./ai-sdk-parts.js";

type Json = Record<string, unknown>;

export interface LogbookChatStoreOptions {
  /** Default: `new Client()` (`$LOGBOOK_URL`, `$LOGBOOK_API_KEY`). */
  client?: Client;
  /** For the sessions `saveChat` creates. */
  agentId?: string;
  metadata?: Record<string, unknown>;
}

/** What the store last saw stored of a chat: each UIMessage (its id, its messages' form, its first seq and client id), and the session's last seq. */
interface Saved {
  lastSeq: number;
  groups: { id: string; form: string; firstSeq: number; clientId: string | null }[];
}

/** JSON with every object's keys sorted. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    const o = v as Json;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

/** A message's stored form, the same whether read back or about to be sent. */
function formOf(m: MessageInput | Message): unknown {
  const calls = (m.tool_calls ?? []).map((c) => ({ ...c }));
  return {
    role: m.role,
    client_id: m.client_id ?? null,
    content: m.content ?? "",
    tool_calls: calls.length > 0 ? calls : null,
    tool_call_id: m.tool_call_id ?? null,
    name: m.name ?? null,
    is_error: m.is_error ?? false,
    metadata: m.metadata && Object.keys(m.metadata).length > 0 ? m.metadata : null,
    provider_item: m.provider_item ?? null,
  };
}

/** Groups a chat's stored messages as messagesToUI does: each UIMessage's id and its messages. */
function groups(messages: Message[]): { id: string; msgs: Message[] }[] {
  const out: { id: string; msgs: Message[] }[] = [];
  for (const m of messages) {
    const g = out.at(-1);
    if (g && m.client_id === `${g.id}#${g.msgs.length}`) g.msgs.push(m);
    else out.push({ id: m.client_id ?? m.id, msgs: [m] });
  }
  return out;
}

/**
 * A chat store for the AI SDK: each chat is a Logbook session whose id is the
 * chat's id (1 to 128 characters of `A-Z a-z 0-9 _ . : -`).
 *
 * ```ts
 * const store = new LogbookChatStore({ client });
 * const messages = await store.loadChat(chatId); // UIMessage[]
 * return result.toUIMessageStreamResponse({
 *   originalMessages: messages,
 *   onFinish: ({ messages }) => store.saveChat({ chatId, messages }),
 * });
 * ```
 *
 * `saveChat` takes the whole chat, finds the first message that differs
 * from what is stored (by id and content: a new turn, an edited or
 * regenerated message), and replaces everything from it in ONE request: a
 * rewind from that message's client id, fenced by the session's last seq,
 * with the new messages. Saving the same chat again writes nothing.
 * Attachments (`file` parts with `data:` URLs) are stored as files by the
 * server and come back exactly as saved; tool parts in every state, data
 * parts, sources and step boundaries too (README, "Mapping AI SDK chats").
 */
export class LogbookChatStore {
  readonly client: Client;
  readonly #create: { agent_id?: string; metadata?: Record<string, unknown> };
  readonly #saved = new Map<string, Saved>();

  constructor(opts: LogbookChatStoreOptions = {}) {
    this.client = opts.client ?? new Client();
    this.#create = { agent_id: opts.agentId, metadata: opts.metadata };
  }

  /** The chat's messages, oldest first; `[]` for a chat never saved. */
  async loadChat(chatId: string): Promise<UIMessage[]> {
    const msgs = await this.#read(chatId);
    return messagesToUI(msgs);
  }

  /** Stores the chat as `messages` say, in one request (nothing when nothing changed). */
  async saveChat({ chatId, messages }: { chatId: string; messages: UIMessage[] }): Promise<void> {
    const ui = JSON.parse(JSON.stringify(messages)) as UIMessage[]; // as JSON holds it: no undefined keys
    const opaque = new Set<number>();
    for (let tries = 0; tries < 100; tries++) {
      const saved = this.#saved.get(chatId) ?? (await this.#load(chatId));
      const mapped = ui.map((m, i) => uiToMessages(m, opaque.has(i)));
      const forms = mapped.map((ms) => canonical(ms.map(formOf)));
      const stored = saved.groups;
      let first = 0;
      while (first < stored.length && first < ui.length && stored[first]!.id === ui[first]!.id && stored[first]!.form === forms[first]) first++;
      if (first === stored.length && first === ui.length) return; // stored as it is
      const tail = mapped.slice(first).flat();
      const owner: number[] = mapped.slice(first).flatMap((ms, j) => ms.map(() => first + j));
      try {
        const written = await this.#write(chatId, saved, first, tail);
        const seqs = written.messages.map((m) => m.seq);
        let at = 0;
        const added = mapped.slice(first).map((ms, j) => {
          const g = { id: ui[first + j]!.id, form: forms[first + j]!, firstSeq: seqs[at]!, clientId: ms[0]!.client_id ?? null };
          at += ms.length;
          return g;
        });
        this.#saved.set(chatId, { lastSeq: written.lastSeq, groups: [...stored.slice(0, first), ...added] });
        return;
      } catch (err) {
        this.#saved.delete(chatId);
        if (!(err instanceof Problem)) throw err;
        if (err.code === "stale_seq" || err.code === "client_id_taken") continue; // another writer: look again
        // A message whose typed form the server refuses is stored whole.
        const named = err.errors
          .map((e) => /^messages\[(\d+)\]/.exec(e.field)?.[1])
          .filter((n): n is string => n !== undefined)
          .map((n) => owner[Number(n)])
          .filter((n): n is number => n !== undefined && !opaque.has(n));
        if (named.length === 0 || !["validation_failed", "unknown_tool_call", "duplicate_tool_result"].includes(err.code)) throw err;
        for (const n of named) opaque.add(n);
      }
    }
    throw new Error(`saveChat ${chatId}: the chat kept changing under 100 attempts`);
  }

  /**
   * One rewind: everything from UIMessage `first` on goes (by its client id,
   * or its seq for a message another runtime wrote), tail comes after, fenced
   * by the session's last seq.
   */
  async #write(chatId: string, saved: Saved, first: number, tail: MessageInput[]): Promise<{ lastSeq: number; messages: Message[] }> {
    const from = saved.groups[first];
    try {
      const res = await this.client.rewind(chatId, {
        ...(from === undefined ? { to_seq: saved.lastSeq } : from.clientId !== null ? { from_client_id: from.clientId } : { to_seq: from.firstSeq - 1 }),
        expected_last_seq: saved.lastSeq,
        ...(tail.length > 0 ? { messages: tail } : {}),
      });
      return { lastSeq: res.session.last_seq, messages: res.messages };
    } catch (err) {
      if (!(err instanceof Problem && err.code === "not_found" && saved.lastSeq === 0 && saved.groups.length === 0)) throw err;
    }
    await this.client.createSession({ id: chatId, ...this.#create }).catch((e: unknown) => {
      if (!(e instanceof Problem && e.code === "conflict")) throw e;
    });
    if (tail.length === 0) return { lastSeq: 0, messages: [] };
    const messages = await this.client.appendMessages(chatId, tail, { expectedLastSeq: 0 });
    return { lastSeq: messages.at(-1)!.seq, messages };
  }

  async #read(chatId: string): Promise<Message[]> {
    try {
      return await this.client.listMessages(chatId, { limit: 200 }).toArray();
    } catch (err) {
      if (err instanceof Problem && err.code === "not_found") return [];
      throw err;
    }
  }

  /** What is stored of the chat, as saveChat compares it. */
  async #load(chatId: string): Promise<Saved> {
    const msgs = await this.#read(chatId);
    return {
      lastSeq: msgs.at(-1)?.seq ?? 0,
      groups: groups(msgs).map((g) => ({
        id: g.id,
        form: canonical(g.msgs.map(formOf)),
        firstSeq: g.msgs[0]!.seq,
        clientId: g.msgs[0]!.client_id,
      })),
    };
  }
}
