// ESLint's flat config for the stepper's front end (frontend/): ES modules in the browser,
// the build script and the unit tests under Node.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/", "assets/", ".venv/", "out/", "build/", "dist/"] },
  js.configs.recommended,
  {
    files: ["frontend/src/**/*.js", "frontend/entries/**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
  },
  {
    files: ["frontend/test/**/*.js", "frontend/*.mjs", "eslint.config.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.node },
  },
  {
    rules: {
      "no-unused-vars": ["error", { args: "after-used", argsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always"],
      "no-var": "error",
      "prefer-const": "error",
    },
  },
];
