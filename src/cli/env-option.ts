import { isEnvServerUrl, useRemoteEnv } from "../remote/index.ts";

/** The `--env` help text of commands that run on an env server too. */
export const ENV_OR_URL = "environment, or an env server's URL (ws://host:port, http://host:port; dreamgym serve)";

/**
 * `--env ws://host:port`: resolves the env server once and makes its env's name mean that server for
 * this command (`o.env` becomes the name, so trajectories are labelled as the env's); then runs `fn`.
 */
export async function withEnvOption<T>(o: { env: string; data?: string }, fn: (url?: string) => Promise<T>): Promise<T> {
  if (!isEnvServerUrl(o.env)) return fn();
  const remote = await useRemoteEnv(o.env, { dataDir: o.data });
  o.env = remote.name;
  try {
    return await fn(remote.url);
  } finally {
    await remote.release();
  }
}
