// Who the key acts as (GET /v1/whoami), asked once per key: the pages show
// an action only when the key's scope allows it, so a read key sees none. A
// server without /v1/whoami (older) is taken as read-only: the page never
// offers what it cannot tell the key may do.

import { ApiError, get } from "./api.js";
import { onKeyChange } from "./auth.js";

const RANK = { read: 1, write: 2, admin: 3 };
let pending = null;

onKeyChange(() => {
  pending = null;
});

/** identity answers {tenant, scope, user_id, key_id, open_mode}, or a read-only stand-in. */
export function identity() {
  if (!pending) {
    pending = get("/v1/whoami").catch((err) => {
      if (err instanceof ApiError && err.status === 404) return { scope: "read", unknown: true };
      pending = null; // asked again next time: the key may come, or the server
      throw err;
    });
  }
  return pending;
}

/** allows says whether an identity's scope reaches need ("read", "write", "admin"). */
export function allows(who, need) {
  return (RANK[who?.scope] || 0) >= RANK[need];
}

/** canWrite answers whether the key may write, false when that cannot be told. */
export async function canWrite() {
  try {
    return allows(await identity(), "write");
  } catch {
    return false;
  }
}
