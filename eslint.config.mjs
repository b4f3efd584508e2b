import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/**", ".next/**", ".tmp/**", "data/**", "db/migrations/**", "next-env.d.ts", "test-results/**", "dist/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly", setTimeout: "readonly", clearTimeout: "readonly", setInterval: "readonly", clearInterval: "readonly", Buffer: "readonly", performance: "readonly", fetch: "readonly", window: "readonly", document: "readonly", navigator: "readonly", AbortController: "readonly", AbortSignal: "readonly", TextEncoder: "readonly", TextDecoder: "readonly", structuredClone: "readonly", queueMicrotask: "readonly", setImmediate: "readonly", Response: "readonly", Request: "readonly", Headers: "readonly", crypto: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      "@typescript-eslint/no-explicit-any": "error",
      "no-undef": "off",
    },
  },
  {
    // The agent runs alone on VPN servers (one bundled file): node builtins, zod and core/ only.
    files: ["agent/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: ["next", "react", "react-dom", "drizzle-orm"].map((name) => ({ name, message: "the agent runs alone on VPN servers: use node builtins, zod and core/ only" })),
          patterns: [
            {
              group: ["@/*", "**/server", "**/server/**", "**/components", "**/components/**", "**/db", "**/db/**", "**/app", "**/app/**", "**/lib", "**/lib/**", "next/*", "react/*", "react-dom/*", "drizzle-orm/*"],
              message: "the agent runs alone on VPN servers: use node builtins, zod and core/ (by relative path) only",
            },
          ],
        },
      ],
    },
  },
);
