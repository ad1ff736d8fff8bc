import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { refuseBufferFolder } from "../buffer/index.ts";
import { InvalidConfigError } from "../core/index.ts";
import { createViewApp, startServer } from "../server/index.ts";
import { inFile } from "./errors.ts";
import { parseIntOption } from "./options.ts";
import { readToken } from "./serve-command.ts";
import { untilStopSignal } from "./signals.ts";
import { cliConsole as console } from "./io.ts";

interface ViewOptions {
  runs: string;
  buffer?: string;
  port: number;
  host: string;
  tokenFile?: string;
}

export function registerView(program: Command): void {
  program
    .command("view")
    .description(
      "a local web app to look at runs (curves, live), episodes (synthetic beside real), retrieval, the curriculum and audits; runs until SIGTERM/SIGINT",
    )
    .option("--runs <dir>", "a folder of run folders (at any depth: an experiment's rows), or one run folder", ".")
    .option("--buffer <file>", "a replay buffer to browse and search, besides the runs' own")
    .option("--port <n>", "port (0: any free port, printed)", parseIntOption("port", 0, 65_535), 8080)
    .option("--host <address>", "address to bind; any but 127.0.0.1, localhost or ::1 needs a token", "127.0.0.1")
    .option("--token-file <file>", "require the file's token (open /?token=<token> once, or send Authorization: Bearer) (else $DREAMGYM_TOKEN, if set)")
    .action(async (o: ViewOptions) => {
      const runs = resolve(o.runs);
      if (!existsSync(runs)) throw new InvalidConfigError(`--runs ${o.runs}: no such folder`);
      if (!statSync(runs).isDirectory()) throw new InvalidConfigError(`--runs ${o.runs} is a file: give the folder that holds run folders`);
      if (o.buffer !== undefined && !existsSync(o.buffer)) throw new InvalidConfigError(`--buffer ${o.buffer}: no such file`);
      if (o.buffer !== undefined) refuseBufferFolder(o.buffer);
      const token = readToken(o);
      const app = o.buffer !== undefined ? await inFile(o.buffer, () => createViewApp({ runs, buffer: o.buffer, token })) : createViewApp({ runs, token });
      let server;
      try {
        server = await startServer({ app, port: o.port, host: o.host });
      } catch (e) {
        await app.close();
        throw e;
      }
      console.log(`dreamgym view on ${server.url}/${token ? "?token=<token>" : ""}  (runs: ${runs}${o.buffer ? `, buffer: ${o.buffer}` : ""})`);
      // Runs until a signal; a second one while shutting down stops at once.
      const signal = await untilStopSignal();
      await server.close();
      console.error(`${signal}: stopped`);
    });
}
