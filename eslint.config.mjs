import js from "@eslint/js";
import tseslint from "typescript-eslint";

/**
 * The layers of server/: each folder (one capability) and the folders it may import. Nothing
 * may import a folder that imports it, directly or not (server/layers.test.ts checks the table
 * has no cycle, names every folder, and that the tree keeps it, dynamic imports included).
 * Type imports count: a folder that needs another's types depends on its meaning as much as
 * on its values, and no type import needs an exception today. Tests (*.test.ts) are exempt:
 * nothing imports a test, so it closes no cycle, and a capability's tests may drive it through
 * the API above it. server/*.ts (the foundation: db, bus, env, logger… and the composition
 * root, services.ts and main.ts) sit outside the table.
 */
export const serverLayers = {
  auth: [],
  balancer: [],
  http: [],
  alerts: ["auth"],
  assignments: ["auth"],
  usage: ["alerts", "auth"],
  import: ["auth", "usage"],
  monitoring: ["alerts", "auth", "balancer", "usage"],
  subscription: ["assignments", "auth", "balancer", "http", "import", "usage"],
  topology: ["assignments", "auth", "monitoring", "subscription", "usage"],
  accounts: ["assignments", "auth", "subscription", "usage"],
  demo: ["auth", "monitoring", "topology"],
  dataplane: ["alerts", "auth", "http", "monitoring", "subscription", "usage"],
  api: ["accounts", "alerts", "assignments", "auth", "dataplane", "demo", "http", "import", "monitoring", "subscription", "topology", "usage"],
  fuzz: ["accounts", "alerts", "api", "assignments", "auth", "balancer", "dataplane", "demo", "http", "import", "monitoring", "subscription", "topology", "usage"],
};

/** One no-restricted-imports block per folder of serverLayers: every folder it may not import. */
const serverLayerRules = Object.entries(serverLayers).map(([folder, allowed]) => {
  const refused = Object.keys(serverLayers).filter((other) => other !== folder && !allowed.includes(other));
  return {
    files: [`server/${folder}/**`],
    ignores: ["server/**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: refused.length === 0 ? [] : [
            {
              regex: `^(@/server/|(\\.\\./)+)(${refused.join("|")})(/|$)`,
              message: `server/${folder}/ may import only ${allowed.length > 0 ? allowed.map((a) => `server/${a}/`).join(", ") : "no other folder of server/"} (serverLayers in eslint.config.mjs)`,
            },
          ],
        },
      ],
    },
  };
});

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
  {
    // Browser code (pages, components, client helpers) may see the server only as types: a value
    // import would pull server modules (and secrets) into the bundle. Rules both sides need live
    // in core/.
    files: ["components/**", "lib/**", "app/**"],
    ignores: ["app/api/**"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@/server", "@/server/**", "@/db", "@/db/**", "**/server", "**/server/**", "**/db", "**/db/**", "!next/server"],
              allowTypeImports: true,
              message: "browser code may import server/ and db/ only with `import type`; move a shared rule into core/",
            },
          ],
        },
      ],
    },
  },
  {
    // core/ is shared by the browser, the server and the agent: it depends on nothing of theirs.
    files: ["core/**"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          paths: ["next", "react", "react-dom"].map((name) => ({ name, message: "core/ is browser- and agent-safe: no framework imports" })),
          patterns: [
            {
              group: ["@/server", "@/server/**", "@/db", "@/db/**", "@/components", "@/components/**", "@/lib", "@/lib/**", "@/app", "@/app/**", "**/server", "**/server/**", "**/db", "**/db/**", "**/components", "**/components/**", "**/lib", "**/lib/**", "**/app", "**/app/**", "next/*", "react/*", "react-dom/*"],
              message: "core/ is shared by browser, server and agent: it imports only zod and other core/ modules",
            },
          ],
        },
      ],
    },
  },
  ...serverLayerRules,
);
