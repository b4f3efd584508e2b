/** Argument handling the operator CLIs share (backup, restore, import). */

/**
 * Walks `argv`: `take(arg, value, positional)` handles one argument, taking a flag's value
 * with `value()` (refused when missing or another flag) and an optional positional argument
 * after it with `positional()`. Answers the first error (`take` returning a message, or a
 * missing value), or null.
 */
export function walkArgs(argv: readonly string[], take: (arg: string, value: () => string, positional: () => string | undefined) => string | null | void): string | null {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined || v.startsWith("--")) throw new Error(`${arg} needs a value`);
      return v;
    };
    const positional = () => (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith("--") ? argv[++i] : undefined);
    try {
      const error = take(arg, value, positional);
      if (error) return error;
    } catch (err) {
      return (err as Error).message;
    }
  }
  return null;
}

/**
 * The install a CLI works on: the running app (its URL and an API token with `scope`, from the
 * flags or the environment) or a stopped one's data dir, never both. Fills in `app` and `token`.
 */
export function appTarget(args: { app?: string; token?: string; dataDir?: string }, envVars: Record<string, string | undefined>, tokenVar: string, scope: string): string | null {
  if (args.dataDir) return args.app || args.token ? "--data-dir (the app stopped) and --app/--token (the app running) do not go together" : null;
  args.token ??= envVars[tokenVar];
  args.app ??= envVars.ROUTEBOARD_URL ?? `http://127.0.0.1:${envVars.PORT ?? 3000}`;
  return args.token ? null : `the running app needs an API token with the ${scope} scope: --token or ${tokenVar} (or --data-dir DIR when the app is stopped)`;
}
