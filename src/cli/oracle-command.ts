import type { Command } from "commander";
import { InvalidConfigError } from "../core/index.ts";
import { oracleEnvs, parseNoiseKinds, REWARD_NOISE_KINDS, startOracleServer, STATE_NOISE_KINDS } from "../oracle/index.ts";
import { parseIntOption, parseNumberOption } from "./options.ts";
import { untilStopSignal } from "./signals.ts";
import { cliConsole as console } from "./io.ts";

interface OracleServeOptions {
  env: string;
  epsilonR: number;
  epsilonP: number;
  rewardNoise: string;
  stateNoise: string;
  seed: number;
  port: number;
  host: string;
  data?: string;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

export function registerOracleModel(program: Command): void {
  const oracle = program
    .command("oracle-model")
    .description("an experience model that knows the truth (the real env), with known, seeded noise: for fidelity sweeps");
  oracle
    .command("serve")
    .description("serve the oracle as an OpenAI-compatible chat model (use it with --experience <url>#oracle); runs until SIGTERM/SIGINT")
    .option("--env <name>", "environment (webshop only)", "webshop")
    .option("--epsilon-r <p>", "probability that a step's reward is corrupted", parseNumberOption("epsilon-r", 0, 1), 0)
    .option("--epsilon-p <p>", "probability that a step's next state is corrupted (when its reward is not)", parseNumberOption("epsilon-p", 0, 1), 0)
    .option(
      "--reward-noise <kinds>",
      `reward error kinds, with weights: ${REWARD_NOISE_KINDS.join(", ")} (e.g. false-success:2,miss)`,
      REWARD_NOISE_KINDS.join(","),
    )
    .option("--state-noise <kinds>", `state error kinds, with weights: ${STATE_NOISE_KINDS.join(", ")}`, STATE_NOISE_KINDS.join(","))
    .option("--seed <n>", "seed of the noise (each answer's draws hash the seed, task and actions)", parseIntOption("seed"), 0)
    .option("--port <n>", "port (0: any free port, printed)", parseIntOption("port", 0, 65_535), 8100)
    .option("--host <address>", "address to bind (loopback only: the oracle takes no token)", "127.0.0.1")
    .option("--data <dir>", "data folder")
    .action(async (o: OracleServeOptions) => {
      if (!oracleEnvs().includes(o.env)) throw new InvalidConfigError(`the oracle model plays ${oracleEnvs().join(", ")} only, not "${o.env}"`);
      if (!LOOPBACK.has(o.host)) throw new InvalidConfigError(`the oracle model serves loopback only (127.0.0.1, localhost, ::1), not ${o.host}`);
      const noise = {
        epsilonR: o.epsilonR,
        epsilonP: o.epsilonP,
        seed: o.seed,
        rewardKinds: parseNoiseKinds(o.rewardNoise, REWARD_NOISE_KINDS, "reward"),
        stateKinds: parseNoiseKinds(o.stateNoise, STATE_NOISE_KINDS, "state"),
      };
      const server = await startOracleServer({ noise, env: o.env, dataDir: o.data, port: o.port, host: o.host });
      console.log(`oracle model on ${server.url} (ε_R ${o.epsilonR}, ε_P ${o.epsilonP}, seed ${o.seed}): --experience ${server.experience}`);
      const started = performance.now();

      // Runs until a signal; a second one while shutting down stops at once.
      const signal = await untilStopSignal();
      const s = server.stats;
      await server.close();
      const wall = (performance.now() - started) / 1000;
      console.error(
        `${signal}: stopped; ${s.requests} requests (${s.refused} refused) in ${wall.toFixed(1)} s, ${s.busySeconds > 0 ? (s.requests / s.busySeconds).toFixed(0) : "-"} requests/s of busy time; corrupted: ${s.rewardCorrupted} rewards, ${s.stateCorrupted} states; ${s.envSteps} env steps (${s.cachedSteps} saved by the prefix cache)`,
      );
    });
}
