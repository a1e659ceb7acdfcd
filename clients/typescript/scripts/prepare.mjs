// npm runs `prepare` when a project installs this folder (`npm install
// ../logbook/clients/typescript`) and before `npm pack`: it builds dist/ from
// src/ so that what is installed is what the checkout holds now. dist/ is not
// committed, so it can never lag behind src/. The build needs this folder's
// TypeScript; without it (no `npm ci` here yet) it says what to run rather
// than failing with "tsc: not found".

import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc)) {
  console.error(`@logbook/client: building dist/ needs TypeScript in ${pkg}: run \`npm ci\` there once, then install again.`);
  process.exit(1);
}
execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: pkg, stdio: "inherit" });
