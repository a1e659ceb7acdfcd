// LangGraph's long-term memory store (@langchain/langgraph's BaseStore) on
// Logbook's item store: a graph's `config.store` reads and writes items, and
// searches them by filters and by meaning (embedded by the server).

import {
  BaseStore,
  type GetOperation,
  type Item as StoreItem,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchOperation,
} from "@langchain/langgraph";
import { Client } from "./client.js";
import type { Item, ItemOp, ItemResult } from "./types.js";

/** A search's item with its score (LangGraph's SearchItem, which its package does not export). */
type SearchItem = StoreItem & { score?: number };

/** The most operations one item batch takes: a larger batch goes in several requests. */
const MAX_BATCH = 100;

export interface LogbookStoreOptions {
  client: Client;
  /** Keep the items in this end user's space instead of the tenant's shared one. */
  userId?: string;
  /**
   * As InMemoryStore's `index`: the value's fields (LangGraph paths, `"$"` for
   * the whole value) whose texts are embedded for search by meaning, when a
   * put does not say (`put(ns, key, value, index)` does). The server embeds
   * them with the tenant's or its own endpoint, after the put returns.
   * Left out, a put embeds nothing unless it names fields.
   */
  index?: { fields?: string[] };
  /** Expire each item this long after its last put (seconds); left out, items stay. */
  ttlSeconds?: number;
}

function toStoreItem(it: Item): StoreItem {
  return { namespace: it.namespace, key: it.key, value: it.value, createdAt: new Date(it.created_at), updatedAt: new Date(it.updated_at) };
}

/** A listing's prefix or suffix condition (LangGraph's list takes one of each). */
function condition(op: ListNamespacesOperation, type: "prefix" | "suffix"): string[] | undefined {
  const found = (op.matchConditions ?? []).filter((c) => c.matchType === type);
  if (found.length > 1) throw new Error(`LogbookStore: at most one ${type} condition per listNamespaces, not ${found.length}`);
  return found[0]?.path.map(String);
}

/**
 * LangGraph's `BaseStore` over Logbook's item store. `batch` sends every
 * operation it is given in one `POST /v1/items/batch` (100 at most each; a
 * larger batch goes in several, in order), which runs them as LangGraph's
 * own stores do: the reads first, then the writes, in one transaction.
 *
 * ```ts
 * const store = new LogbookStore({ client: new Client(), index: { fields: ["text"] } });
 * const graph = builder.compile({ store });
 * ```
 *
 * Search by meaning needs an embedding endpoint on the server (the tenant's,
 * `PUT /v1/admin/embedding`, or `--embedding-url`); a put's texts are
 * embedded shortly after it returns (its item's `embedding_state` says when),
 * and until then the item is found without a score, after the scored ones.
 */
export class LogbookStore extends BaseStore {
  readonly client: Client;
  readonly #userId: string | undefined;
  readonly #fields: string[] | undefined;
  readonly #ttl: number | undefined;

  constructor(opts: LogbookStoreOptions) {
    super();
    this.client = opts.client;
    this.#userId = opts.userId;
    this.#fields = opts.index?.fields;
    this.#ttl = opts.ttlSeconds;
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const ops = operations.map((o) => this.#toItemOp(o));
    const results: ItemResult[] = [];
    for (let i = 0; i < ops.length; i += MAX_BATCH) {
      results.push(...(await this.client.itemBatch(ops.slice(i, i + MAX_BATCH), { userId: this.#userId })));
    }
    return results.map((r) => this.#fromResult(r)) as OperationResults<Op>;
  }

  #toItemOp(o: Operation): ItemOp {
    if ("namespacePrefix" in o) {
      const s = o as SearchOperation;
      const op: ItemOp = { op: "search", namespace_prefix: s.namespacePrefix, limit: s.limit ?? 10 };
      if (s.offset) op.offset = s.offset;
      if (s.filter && Object.keys(s.filter).length > 0) op.filter = s.filter;
      if (s.query) op.query = s.query;
      return op;
    }
    if ("value" in o) {
      const p = o as PutOperation;
      if (p.value === null) return { op: "delete", namespace: p.namespace, key: p.key };
      const op: ItemOp = { op: "put", namespace: p.namespace, key: p.key, value: p.value };
      const index = p.index === undefined ? this.#fields : p.index;
      if (index !== undefined) op.index = index;
      if (this.#ttl !== undefined) op.ttl_seconds = this.#ttl;
      return op;
    }
    if ("key" in o) {
      const g = o as GetOperation;
      return { op: "get", namespace: g.namespace, key: g.key };
    }
    const l = o as ListNamespacesOperation;
    const op: ItemOp = { op: "list_namespaces", limit: l.limit ?? 100 };
    const prefix = condition(l, "prefix");
    const suffix = condition(l, "suffix");
    if (prefix) op.prefix = prefix;
    if (suffix) op.suffix = suffix;
    if (l.maxDepth !== undefined) op.max_depth = l.maxDepth;
    if (l.offset) op.offset = l.offset;
    return op;
  }

  #fromResult(r: ItemResult): unknown {
    switch (r.op) {
      case "get":
        return r.item ? toStoreItem(r.item) : null;
      case "search":
        return (r.items ?? []).map((h): SearchItem => {
          const out: SearchItem = toStoreItem(h);
          if (h.score !== null && h.score !== undefined) out.score = h.score;
          return out;
        });
      case "list_namespaces":
        return r.namespaces ?? [];
      default:
        return undefined; // put and delete answer nothing
    }
  }
}
