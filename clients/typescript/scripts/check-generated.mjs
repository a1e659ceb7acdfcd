// Fails when src/schema.ts is not what `npm run generate` makes of
// openapi.yaml now: regenerate into a temporary file and compare.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = mkdtempSync(join(tmpdir(), "logbook-schema-"));
try {
  const out = join(tmp, "schema.ts");
  execFileSync(process.execPath, [join(pkg, "node_modules", "openapi-typescript", "bin", "cli.js"), "../../openapi.yaml", "--output", out], {
    cwd: pkg,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const fresh = readFileSync(out, "utf8");
  const committed = readFileSync(join(pkg, "src", "schema.ts"), "utf8");
  if (fresh !== committed) {
    console.error("src/schema.ts differs from what openapi-typescript makes of ../../openapi.yaml: run `npm run generate` and commit it.");
    process.exit(1);
  }
  console.log("src/schema.ts matches openapi.yaml");
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
