// The offline page of a replay with explanations (memory, health, diff, optimizer data).
import { explain } from "../src/overlays/explain.js";
import { mountStandalone } from "../src/standalone.js";

mountStandalone(document, { overlays: [explain] });
