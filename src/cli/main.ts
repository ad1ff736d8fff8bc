import { Command, CommanderError } from "commander";
import { DreamGymError } from "../core/index.ts";
import { registerAudit } from "./audit-command.ts";
import { registerBufferCommands } from "./buffer-commands.ts";
import { registerCollect } from "./collect.ts";
import { registerSft } from "./sft-command.ts";
import { registerTrain } from "./train-command.ts";
import { registerRollout } from "./rollout-command.ts";
import { registerDemo } from "./demo-command.ts";
import { registerEnvCommands } from "./env-commands.ts";

const program = new Command();
program
  .name("dreamgym")
  .description("Train LLM agents with RL on synthetic experience (DreamGym).")
  .showHelpAfterError()
  .exitOverride();
registerEnvCommands(program);
registerCollect(program);
registerBufferCommands(program);
registerAudit(program);
registerSft(program);
registerTrain(program);
registerRollout(program);
registerDemo(program);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) process.exit(e.exitCode);
  if (DreamGymError.isInstance(e)) {
    console.error(`error: ${e.message}`);
    process.exit(2);
  }
  throw e;
}
