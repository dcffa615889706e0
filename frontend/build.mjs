// Bundles the front end (frontend/entries/*.js and the modules they import) into the files
// gradviz inlines, assets/stepper-*.js and assets/filmstrip*.js, minified by esbuild.
//   node frontend/build.mjs          write them
//   node frontend/build.mjs --check  exit 1 when a committed bundle differs from its sources
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
// entry -> the committed bundle (gradviz/stepper/page.py and widget.py read them)
export const BUNDLES = {
  "page.js": "stepper-page.js",
  "page-lazy.js": "stepper-page-lazy.js",
  "page-explain.js": "stepper-page-explain.js",
  "page-lazy-explain.js": "stepper-page-lazy-explain.js",
  "widget.js": "stepper-widget.js",
  "embedded.js": "stepper-embedded.js",
  "filmstrip.js": "filmstrip.js",
  "filmstrip-widget.js": "filmstrip-widget.js",
};

// The overlays' registry, "gradviz:overlays": [key, class] for each key of
// gradviz/replay/overlays.py's OVERLAYS, in its order, the class being the default export of
// frontend/src/overlays/<key>.js (the data key names the module: one place registers both).
export function overlayKeys() {
  const source = readFileSync(join(ROOT, "gradviz", "replay", "overlays.py"), "utf8");
  const block = source.match(/^OVERLAYS = \(\n([\s\S]*?)^\)/m);
  const keys = block ? [...block[1].matchAll(/^ {4}Overlay\("([a-z_]+)"/gm)].map((m) => m[1]) : [];
  if (!keys.length) throw new Error("gradviz/replay/overlays.py: no OVERLAYS = (Overlay(\"key\"), ...) found");
  return keys;
}

const overlayRegistry = {
  name: "gradviz-overlays",
  setup(build) {
    build.onResolve({ filter: /^gradviz:overlays$/ }, () => ({ path: "overlays", namespace: "gradviz" }));
    build.onLoad({ filter: /.*/, namespace: "gradviz" }, () => {
      const keys = overlayKeys();
      const imports = keys.map((key, i) => `import overlay${i} from "./${key}.js";`);
      const entries = keys.map((key, i) => `[${JSON.stringify(key)}, overlay${i}]`);
      return {
        contents: `${imports.join("\n")}\nexport default [${entries.join(", ")}];\n`,
        resolveDir: join(ROOT, "frontend", "src", "overlays"),
        loader: "js",
      };
    });
  },
};

// One bundle's text. The page inlines it in a <script>: it must not close it or open a comment.
async function bundle(entry) {
  const result = await build({
    entryPoints: [join(ROOT, "frontend", "entries", entry)],
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    legalComments: "none",
    charset: "utf8",
    write: false,
    logLevel: "silent",
    plugins: [overlayRegistry],
  });
  const text = result.outputFiles[0].text;
  const lowered = text.toLowerCase();
  if (lowered.includes("</script") || lowered.includes("<!--")) {
    throw new Error(`${entry}: the bundle holds '</script' or '<!--', which an inline <script> cannot`);
  }
  return text;
}

async function main(check) {
  const stale = [];
  for (const [entry, out] of Object.entries(BUNDLES)) {
    const path = join(ROOT, "assets", out);
    const text = await bundle(entry);
    if (!check) writeFileSync(path, text);
    else {
      if (!existsSync(path) || readFileSync(path, "utf8") !== text) stale.push(`assets/${out}`);
    }
  }
  if (stale.length) {
    console.error(`stale bundles (run \`make frontend\` and commit them): ${stale.join(", ")}`);
    process.exit(1);
  }
}

// run as a script (imported, e.g. for overlayKeys, it writes nothing)
if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.includes("--check"));
