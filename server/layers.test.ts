/**
 * The folder layering of server/ (serverLayers in eslint.config.mjs) holds, so the ESLint rule
 * generated from it cannot rot: the table names every folder and has no cycle, and every import
 * between folders (static, re-export, side effect or dynamic; types included; tests exempt, see
 * the table's comment) is one the table allows.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const root = path.resolve(__dirname, "..");
const serverDir = path.join(root, "server");

async function layerTable(): Promise<Record<string, string[]>> {
  // A computed specifier: the config is plain JS, not part of the TypeScript program.
  const config = pathToFileURL(path.join(root, "eslint.config.mjs")).href;
  return ((await import(config)) as { serverLayers: Record<string, string[]> }).serverLayers;
}

const folders = () =>
  fs
    .readdirSync(serverDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(d.name) && !/\.test\.tsx?$/.test(d.name) ? [p] : [];
  });
}

const SPECIFIERS = [/\b(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, /^\s*import\s+["']([^"']+)["']/gm];

/** The server/ folder an import names, or null (server/*.ts, db/, core/, packages). */
function folderOf(fromFile: string, specifier: string): string | null {
  let target: string;
  if (specifier.startsWith("@/")) target = path.join(root, specifier.slice(2));
  else if (specifier.startsWith(".")) target = path.resolve(path.dirname(fromFile), specifier);
  else return null;
  const rel = path.relative(serverDir, target);
  if (rel.startsWith("..") || !rel.includes(path.sep)) return null;
  return rel.split(path.sep)[0]!;
}

/** Folder → folder → the files (and what they import) that make the edge. */
function importsBetweenFolders(): Map<string, Map<string, string[]>> {
  const edges = new Map<string, Map<string, string[]>>();
  for (const folder of folders()) {
    const out = new Map<string, string[]>();
    for (const file of sourceFiles(path.join(serverDir, folder))) {
      const text = fs.readFileSync(file, "utf8");
      for (const re of SPECIFIERS) {
        for (const m of text.matchAll(re)) {
          const to = folderOf(file, m[1]!);
          if (to === null || to === folder) continue;
          out.set(to, [...(out.get(to) ?? []), `${path.relative(root, file)} imports ${m[1]}`]);
        }
      }
    }
    edges.set(folder, out);
  }
  return edges;
}

/** A cycle of the graph as a path (first = last), or null. */
function findCycle(graph: Record<string, readonly string[]>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (n: string): string[] | null => {
    if (state.get(n) === "done") return null;
    if (state.get(n) === "open") return [...stack.slice(stack.indexOf(n)), n];
    state.set(n, "open");
    stack.push(n);
    for (const m of graph[n] ?? []) {
      const c = visit(m);
      if (c) return c;
    }
    stack.pop();
    state.set(n, "done");
    return null;
  };
  for (const n of Object.keys(graph)) {
    const c = visit(n);
    if (c) return c;
  }
  return null;
}

describe("server/ folder layers", () => {
  it("the table names every folder of server/, and only those", async () => {
    expect(Object.keys(await layerTable()).sort()).toEqual(folders());
  });

  it("the table has no cycle", async () => {
    expect(findCycle(await layerTable())).toBeNull();
  });

  it("findCycle finds one (the check above can fail)", () => {
    expect(findCycle({ a: ["b"], b: ["c"], c: ["a"], d: [] })).toEqual(["a", "b", "c", "a"]);
  });

  it("every import between folders is one the table allows, so no two folders import each other", async () => {
    const table = await layerTable();
    const refused: string[] = [];
    const actual: Record<string, string[]> = {};
    for (const [from, targets] of importsBetweenFolders()) {
      actual[from] = [...targets.keys()];
      for (const [to, sites] of targets) if (!(table[from] ?? []).includes(to)) refused.push(...sites);
    }
    expect(refused).toEqual([]);
    expect(findCycle(actual)).toBeNull();
  });
});
