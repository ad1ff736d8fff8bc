import type { Server } from "node:http";
import { InvalidConfigError } from "../core/index.ts";

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: "is in use: stop what holds it or choose another --port",
  EACCES: "needs privileges: choose a port from 1024 up",
  EADDRNOTAVAIL: "is not an address of this machine: check --host",
  ENOTFOUND: "is not a known host name: check --host",
};

/**
 * `server.listen(port, host)`, resolved once it listens. Every server the CLI starts (serve, view,
 * serve-site, oracle-model serve) listens through here, so a port in use or a bad address is the same
 * one-line error naming host:port and what to do, not a stack trace.
 */
export async function listenOn(server: Server, port: number, host: string): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code ? LISTEN_ERRORS[code] : undefined;
    if (why) throw new InvalidConfigError(`${host}:${port} ${why}`);
    throw e;
  }
}
