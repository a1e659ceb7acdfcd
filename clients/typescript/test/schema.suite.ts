import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { packageDir } from "./harness.js";

describe("generated types", () => {
  it("src/schema.ts is what openapi-typescript makes of openapi.yaml (npm run generate)", () => {
    const r = spawnSync(process.execPath, [join(packageDir(), "scripts", "check-generated.mjs")], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr + r.stdout);
  });
});
