// The oracle experience model (issue 19): the real env behind the reasoning model's chat protocol,
// corrupted by known, seeded amounts of reward and state noise, for fidelity sweeps. An env's own
// oracle lives in its folder and comes through its EnvSpec.oracle (WebShop's: dreamgym/envs/webshop).
export { oracleEnvs, startOracleServer } from "./server.ts";
export type { OracleServer, OracleServerOptions, OracleServerStats } from "./server.ts";
export { parseNoiseKinds, pickKind, requestRng, REWARD_NOISE_KINDS, STATE_NOISE_KINDS } from "../core/index.ts";
export type { Oracle, OracleAnswer, OracleNoise, OracleOptions, RewardNoiseKind, StateNoiseKind } from "../core/index.ts";
