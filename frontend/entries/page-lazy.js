// The offline page of a big replay (above LAZY_NODES backward nodes): views parsed lazily.
import { splitLazily } from "../src/lazy/lazysvg.js";
import { startPage } from "../src/damaged.js";
import { mountStandalone } from "../src/standalone.js";

startPage(() => mountStandalone(document, { split: splitLazily }));
