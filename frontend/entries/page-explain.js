// The offline page of a replay with explanations (memory, health, diff, optimizer data).
import { explain } from "../src/overlays/explain.js";
import { startPage } from "../src/damaged.js";
import { mountStandalone } from "../src/standalone.js";

startPage(() => mountStandalone(document, { overlays: [explain] }));
