/**
 * Waits for SIGTERM or SIGINT (a server command runs until then). After it, a second signal while
 * the server shuts down stops the process at once (exit 130).
 */
export async function untilStopSignal(): Promise<NodeJS.Signals> {
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
  const again = () => process.exit(130);
  process.once("SIGTERM", again);
  process.once("SIGINT", again);
  return signal;
}
