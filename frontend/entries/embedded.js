// The stepper a notebook output inlines for where its widget cannot run: every feature (the
// output is made once, whatever the graph), mounted in place of the output's picture.
import { splitLazily } from "../src/lazy/lazysvg.js";
import { mountFallbacks } from "../src/embedded.js";
import { explain } from "../src/overlays/explain.js";

mountFallbacks(document, { split: splitLazily, overlays: [explain] }).catch((error) => console.error(error));
