/**
 * The command line: parses arguments, runs one command (src/cli/commands) through the library, and
 * prints its answer as words or one JSON object, returning the exit code. `runCli` takes its whole
 * world as `io`, so every command is testable in-process; only bin/ calls process.exit.
 */
import { type Command, CommanderError } from 'commander';
import type { Answer } from '../answers/answer.js';
import { envelope, errorAnswer } from '../answers/envelope.js';
import { takeProbeNotices } from '../backends/probe-notices.js';
import { AgentLockError, asAgentLockError, isAgentLockError } from '../core/errors.js';
import type { Identity } from '../core/identity.js';
import { scanArgv } from './argv-scan.js';
import { agentOf, Cli, type CliIo, type GlobalOptions, parentInferred } from './context.js';
import { COMMANDS } from './contract.js';
import { conventionalArgv } from './conventions.js';
import { buildProgram } from './program.js';
import { rewriteBareWait } from './waiting.js';
import { warningLines } from './worktrees.js';

export { type CliIo, VERSION } from './context.js';

function toAgentLockError(error: unknown): AgentLockError {
  if (isAgentLockError(error)) return error;
  if (error instanceof CommanderError && error.code === 'commander.help') {
    // Only global flags, no command: commander's "(outputHelp)" is no message for a person.
    return new AgentLockError('E_USAGE', 'no command given', { hint: 'see --help' });
  }
  if (error instanceof CommanderError) {
    const [text = error.message, ...more] = error.message.replace(/^error:\s*/i, '').split('\n');
    // Commander puts its suggestion on a line of its own, "(Did you mean acquire?)": keep it.
    const suggestion = /Did you mean ([^?]+)\?/.exec(more.join(' '))?.[1];
    return new AgentLockError('E_USAGE', text, {
      hint: suggestion ? `Did you mean ${suggestion}? See --help` : 'see --help',
    });
  }
  return asAgentLockError(error);
}

export async function runCli(fullArgv: readonly string[], io: CliIo): Promise<number> {
  let argv = fullArgv;
  let passthrough: string[] | null = null;
  // `run SCOPE... -- COMMAND ARGS`: everything after `--` is the command's, never ours to parse.
  if (scanArgv(fullArgv).command === 'run') {
    const split = fullArgv.indexOf('--');
    if (split >= 0) {
      passthrough = fullArgv.slice(split + 1);
      argv = fullArgv.slice(0, split);
    }
  }
  argv = rewriteBareWait(conventionalArgv(argv));
  // After the conventions: `help acquire` is `acquire --help` now.
  const named = scanArgv(argv);
  const wantsJson = argv.includes('--json');
  let program: Command | null = null;
  const cli = new Cli(io, () => (program?.opts() ?? {}) as GlobalOptions, COMMANDS);
  cli.passthrough = passthrough;
  let answer: Answer | null = null;
  let helpText = '';
  const asksHelp = argv.includes('-h') || argv.includes('--help');
  program = buildProgram(
    cli,
    (a) => {
      answer = a;
    },
    asksHelp ? null : named.command,
  );
  program.exitOverride();
  program.configureOutput({
    writeOut: (text) => {
      helpText += text;
    },
    writeErr: () => {
      // Commander's own error text is replaced by our one-line ERROR below.
    },
  });
  for (const command of program.commands) {
    command.exitOverride();
    command.configureOutput({ writeOut: (t) => (helpText += t), writeErr: () => {} });
  }
  const command = named.command ?? named.word ?? '';
  let exitCode = 2;
  try {
    if (argv.length === 0) {
      io.stdout(program.helpInformation());
      exitCode = 0;
      return exitCode;
    }
    await program.parseAsync([...argv], { from: 'user' });
    let done = answer as Answer | null;
    // A store this run made Redis because a server answered the probe says so on its first answer.
    const probed = takeProbeNotices();
    if (done !== null && probed.length > 0)
      done = { ...done, warnings: [...(done.warnings ?? []), ...probed] };
    if (done === null) {
      io.stdout(helpText);
      exitCode = 0;
      return exitCode;
    }
    if (program.opts().json && !done.raw)
      io.stdout(`${JSON.stringify(envelope(done, agentOf(cli), null))}\n`);
    else if (done.raw) {
      io.stdout(done.raw.stdout);
      if (done.raw.stderr) io.stderr(done.raw.stderr);
    } else
      io.stdout(
        `${[...done.text, ...warningLines(cli.style, done.warnings), ...inferenceNote(cli, done)].join('\n')}\n`,
      );
    exitCode = done.exitCode;
    return exitCode;
  } catch (error) {
    if (
      error instanceof CommanderError &&
      (error.code === 'commander.helpDisplayed' || error.code === 'commander.version')
    ) {
      io.stdout(helpText);
      exitCode = 0;
      return exitCode;
    }
    const failure = toAgentLockError(error);
    const line = `ERROR: ${cli.name}: ${failure.message}${failure.hint ? ` (${failure.hint})` : ''}`;
    if (wantsJson) {
      io.stdout(
        `${JSON.stringify(envelope(errorAnswer(command, failure.message), agentOf(cli), failure))}\n`,
      );
    } else {
      io.stderr(`${line}\n`);
    }
    if (io.env.AGENT_LOCK_DEBUG && error instanceof Error) io.stderr(`${error.stack}\n`);
    exitCode = 2;
    return exitCode;
  } finally {
    io.answered?.(exitCode);
    await cli.close().catch(() => {});
  }
}

/** Decisions whose answer depends on who the caller's parent is (family rules). */
const FAMILY_DECISIONS = new Set(['acquire', 'check', 'resume', 'release', 'renew', 'note']);

/**
 * The line that says an answer relied on a parent inferred from the calling process: setting
 * AGENT_ID alone silently makes you a sub-agent of whoever runs you, which may grant what a
 * stranger would be refused.
 */
function inferenceNote(cli: Cli, done: Answer): string[] {
  if (!FAMILY_DECISIONS.has(done.command)) return [];
  let who: Identity;
  try {
    who = cli.identity();
  } catch {
    return [];
  }
  if (!parentInferred(who)) return [];
  return [
    `note: acting as a sub-agent of ${who.parentAgentId} (inferred, since AGENT_ID is set and AGENT_PARENT_ID is not); AGENT_PARENT_ID=none acts with no parent`,
  ];
}
