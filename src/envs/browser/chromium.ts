import { accessSync, constants, statSync } from "node:fs";
import { DreamGymError } from "../../core/index.ts";

/** Where Debian's `chromium` package puts the browser. */
export const DEFAULT_CHROMIUM = "/usr/bin/chromium";

/** The browser cannot be started (not installed, not executable, or it fails to launch). */
export class BrowserUnavailableError extends DreamGymError {
  constructor(message: string, cause?: unknown) {
    super(message, "BROWSER_UNAVAILABLE", { cause });
  }
}

/** A site did not answer (connection refused, DNS, timeout). The message names the URL. */
export class SiteUnreachableError extends DreamGymError {
  readonly url: string;
  constructor(url: string, why: string, cause?: unknown) {
    super(`the site at ${url} does not answer (${why}): start it, or check the URL`, "SITE_UNREACHABLE", { cause });
    this.url = url;
  }
}

/**
 * The Chromium executable: `explicit`, else `$DREAMGYM_CHROMIUM`, else Debian's /usr/bin/chromium.
 * Playwright's own browser downloads are never used.
 */
export function resolveChromium(explicit?: string): string {
  const path = explicit ?? (process.env.DREAMGYM_CHROMIUM?.trim() || DEFAULT_CHROMIUM);
  let ok = false;
  try {
    ok = statSync(path).isFile();
    accessSync(path, constants.X_OK);
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new BrowserUnavailableError(
      `Chromium is not installed at ${path}: install Debian's package (apt-get install chromium), or set DREAMGYM_CHROMIUM to a Chromium executable`,
    );
  }
  return path;
}
