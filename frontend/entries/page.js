// The offline page of a small replay without explanations: the core stepper only.
import { startPage } from "../src/damaged.js";
import { mountStandalone } from "../src/standalone.js";

startPage(() => mountStandalone(document));
