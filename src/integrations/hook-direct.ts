/**
 * The hook runtimes without the command line around them. An agent runs its hook on every tool
 * call, so `bin/alock.js` sends exactly `hooks <harness>-pre-tool-use` (no other argument, no
 * global flag) straight here: the argument parser and every other command stay unloaded, which is
 * most of what a call on a free file costs beyond Node's own start. Anything else goes through
 * `runCli` as usual.
 */
import type { Answer, CliContext } from '../answers/answer.js';
import { resolveIdentity } from '../core/identity.js';
import type { Identity } from '../core/identity.js';
import { ancestorChain, hostName } from '../host/process.js';
import { claudePreToolUse } from './claude-hook.js';
import { endOfAction, harnessOfAction } from './harness-names.js';
import { harnessPostToolUse, postHarnessOfAction, preToolUseTold } from './trespass-hooks.js';

export interface DirectIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdin: () => Promise<string>;
  readonly programName: string;
}

/** True when `argv` is a hook call this path answers (else the caller runs the full CLI). */
export function isDirectHook(argv: readonly string[]): boolean {
  return (
    (argv.length === 2 || (argv.length === 3 && argv[2] === '--no-claim')) &&
    argv[0] === 'hooks' &&
    (argv[1] === 'claude-pre-tool-use' ||
      harnessOfAction(argv[1] ?? '') !== null ||
      postHarnessOfAction(argv[1] ?? '') !== null ||
      endOfAction(argv[1] ?? '') !== null)
  );
}

/** Runs the hook and prints its answer; the hooks decide every failure themselves (exit 0). */
export async function runDirectHook(action: string, io: DirectIo): Promise<number> {
  let who: Identity | null = null;
  const cli: CliContext = {
    io: { stdout: io.stdout, stderr: io.stderr, env: io.env, cwd: io.cwd, isTTY: false, stdin: io.stdin },
    name: io.programName,
    style: { color: false },
    // The hooks open the stores they check themselves; nothing here takes a lock.
    open: () => Promise.reject(new Error('the hook runtime opens no store of its own')),
    identity: () => {
      who ??= resolveIdentity(
        io.env,
        ancestorChain(process.ppid > 0 ? process.ppid : process.pid),
        hostName(),
      );
      return who;
    },
    globals: () => ({}),
  };
  const harness = harnessOfAction(action);
  if (harness === null && endOfAction(action) !== null) {
    const answer = await (await import('./turn-end.js')).endOfTurn(cli, action);
    if (answer.raw?.stdout) io.stdout(answer.raw.stdout);
    if (answer.raw?.stderr) io.stderr(answer.raw.stderr);
    return answer.exitCode;
  }
  const post = postHarnessOfAction(action);
  // The other harnesses' adapters (and their payload schemas) load only for their own calls.
  const answer: Answer =
    post !== null
      ? await harnessPostToolUse(cli, post)
      : harness === null
        ? await preToolUseTold(cli, 'claude', claudePreToolUse)
        : await preToolUseTold(cli, harness, async (told) =>
            (await import('./harness-hooks.js')).harnessPreToolUse(told, harness),
          );
  if (answer.raw) {
    io.stdout(answer.raw.stdout);
    if (answer.raw.stderr) io.stderr(answer.raw.stderr);
  }
  return answer.exitCode;
}
