// The offline page of a big replay with explanations.
import { splitLazily } from "../src/lazy/lazysvg.js";
import { explain } from "../src/overlays/explain.js";
import { startPage } from "../src/damaged.js";
import { mountStandalone } from "../src/standalone.js";

startPage(() => mountStandalone(document, { split: splitLazily, overlays: [explain] }));
