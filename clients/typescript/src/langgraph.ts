// @logbook/client/langgraph: LangGraph on Logbook. LogbookStore is a graph's
// long-term memory store (config.store) over Logbook's item store.

export { LogbookStore } from "./langgraph-store.js";
export type { LogbookStoreOptions } from "./langgraph-store.js";
