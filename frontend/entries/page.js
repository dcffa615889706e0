// The offline page of a small replay without explanations: the core stepper only.
import { mountStandalone } from "../src/standalone.js";

mountStandalone(document);
