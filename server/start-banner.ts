/**
 * The line printed once the app listens: where to open it and how to log in. Operators
 * copy the address from here, so behind a reverse proxy it is PUBLIC_URL (the address
 * subscribers and agents use too), with the local port named beside it.
 */
export type BannerEnv = { PORT: number; PUBLIC_URL?: string | undefined; ADMIN_USERNAME?: string | undefined };
export type BannerBoot = { needsSetup: boolean; setupCode: string | null };

/** The address to open: PUBLIC_URL when set (without a trailing slash), else this machine's port. */
export function dashboardUrl(e: BannerEnv, listeningPort: number): string {
  return e.PUBLIC_URL ? e.PUBLIC_URL.replace(/\/+$/, "") : `http://localhost:${listeningPort}`;
}

export function startBanner(e: BannerEnv, boot: BannerBoot, listeningPort: number, setupCodePath: string): string {
  const url = dashboardUrl(e, listeningPort);
  const where = e.PUBLIC_URL ? `${url} (listening on port ${listeningPort})` : url;
  const howToLogIn = boot.needsSetup
    ? `open it and create the owner account on the setup page with this one-time setup code:\n\n    ${boot.setupCode}\n\n(also in ${setupCodePath})`
    : e.ADMIN_USERNAME
      ? `log in as ${e.ADMIN_USERNAME} (ADMIN_PASSWORD)`
      : "log in with your operator account";
  return `\nRouteboard is running on ${where} — ${howToLogIn}.\n\n`;
}
