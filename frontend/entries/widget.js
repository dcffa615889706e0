// The notebook widget's ES module, as anywidget loads it: `export default { render }`.
// The widget ships every feature (its views are laid out on demand, its data may hold any
// explanation), and the explorer's leaves panel, which needs a kernel (never on a page).
import { splitLazily } from "../src/lazy/lazysvg.js";
import { Leaves } from "../src/leaves.js";
import { explain } from "../src/overlays/explain.js";
import { widgetRender } from "../src/widget.js";

export default { render: widgetRender({ split: splitLazily, overlays: [explain], leaves: Leaves }) };
