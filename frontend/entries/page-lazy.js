// The offline page of a big replay (above LAZY_NODES backward nodes): views parsed lazily.
import { splitLazily } from "../src/lazy/lazysvg.js";
import { mountStandalone } from "../src/standalone.js";

mountStandalone(document, { split: splitLazily });
