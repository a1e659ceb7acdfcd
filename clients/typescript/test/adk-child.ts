// The resumed turn of the ADK suite's scripted run, in a process of its own:
// a new LogbookSessionService finds the session, its events and its state in
// Logbook alone. Prints the turn and the session afterwards as one JSON line.
//
//   node build/test/adk-child.js <server url> <user id> <session id>

import { Client } from "../src/index.js";
import { LogbookSessionService } from "../src/adk.js";
import { APP, normEvent, say, turn } from "./adk-scenario.js";

const [baseUrl, userId, sessionId] = process.argv.slice(2);
const sessions = new LogbookSessionService({ client: new Client({ baseUrl }) });
const resumed = await turn(sessions, undefined, userId!, sessionId!, "What do I like to eat?", [say("You like ramen.")]);
const after = await sessions.getSession({ appName: APP, userId: userId!, sessionId: sessionId! });
process.stdout.write(JSON.stringify({ resumed, state: after?.state, events: after?.events.map(normEvent) }) + "\n");
