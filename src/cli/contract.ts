/**
 * The command line's machine-readable contract: the table of commands that `alock contract`,
 * `--help`, shell completion and docs/cli.md are all derived from, in the order they are shown.
 * Each command (its flags and the function that runs it) is a module of its own in commands/.
 */
import { type CliCommand, describeContract } from './command.js';
import { acquireCommand } from './commands/acquire.js';
import { askCommand } from './commands/ask.js';
import { breakCommand } from './commands/break.js';
import { checkCommand } from './commands/check.js';
import { completionCommand } from './commands/completion.js';
import { conflictsCommand } from './commands/conflicts.js';
import { contractCommand } from './commands/contract.js';
import { doctorCommand } from './commands/doctor.js';
import { explainCommand } from './commands/explain.js';
import { guardCommand } from './commands/guard.js';
import { helpCommand } from './commands/help.js';
import { hooksCommand } from './commands/hooks.js';
import { initCommand } from './commands/init.js';
import { listCommand } from './commands/list.js';
import { logCommand } from './commands/log.js';
import { mcpCommand } from './commands/mcp.js';
import { mineCommand } from './commands/mine.js';
import { noteCommand } from './commands/note.js';
import { releaseAllCommand } from './commands/release-all.js';
import { releaseCommand } from './commands/release.js';
import { renewCommand } from './commands/renew.js';
import { replyCommand } from './commands/reply.js';
import { repairCommand } from './commands/repair.js';
import { resumeCommand } from './commands/resume.js';
import { runCommand } from './commands/run.js';
import { skillCommand } from './commands/skill.js';
import { uiCommand } from './commands/ui.js';
import { versionCommand } from './commands/version.js';
import { watchCommand } from './commands/watch.js';
import { whoamiCommand } from './commands/whoami.js';

export const COMMANDS: readonly CliCommand[] = [
  acquireCommand,
  runCommand,
  releaseCommand,
  releaseAllCommand,
  renewCommand,
  checkCommand,
  listCommand,
  mineCommand,
  conflictsCommand,
  noteCommand,
  askCommand,
  replyCommand,
  resumeCommand,
  breakCommand,
  logCommand,
  watchCommand,
  uiCommand,
  explainCommand,
  whoamiCommand,
  versionCommand,
  helpCommand,
  contractCommand,
  completionCommand,
  mcpCommand,
  skillCommand,
  hooksCommand,
  guardCommand,
  doctorCommand,
  repairCommand,
  initCommand,
];

export function contractDocument(version: string): unknown {
  return describeContract(version, COMMANDS);
}
