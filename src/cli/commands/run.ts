/**
 * `alock run SCOPE... -- COMMAND [ARGS...]`, in the manner of flock(1): takes every scope (all or
 * nothing, waiting if asked), runs the command with the lease in its environment, renews the lease
 * while it runs, forwards signals, and releases on every way out. If the lease is lost the command
 * gets SIGTERM, then SIGKILL after a grace, and run exits LEASE_LOST_EXIT.
 */
import type { ChildProcess } from 'node:child_process';
import { parseSeconds } from '../../core/config.js';
import { AgentLockError } from '../../core/errors.js';
import type { Lease, LeaseLostError } from '../../store/lease.js';
import type { Answer } from '../../answers/answer.js';
import { LEASE_LOST_EXIT } from '../../answers/contract.js';
import { quoteArg } from '../../answers/render.js';
import { envelope } from '../../answers/envelope.js';
import { abortedAnswer, agentOf, type Cli, timeoutAnswer } from '../context.js';
import { interruption, signalExitCode } from '../../answers/interruption.js';
import { LiveLine, waitSeconds } from '../waiting.js';
import { otherWorktreeAnswer } from '../worktrees.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import { WAIT_FLAGS } from '../flags.js';

const FLAGS = [
  ...WAIT_FLAGS,
  {
    flags: '-E, --conflict-exit-code <code>',
    description: 'exit code when the lock cannot be had (default 1)',
  },
  { flags: '--ttl <seconds>', description: 'lease length, renewed every third of it (default 30)' },
  { flags: '-m, --message <intent>', description: 'what the command does (shown to others)' },
  { flags: '--shared', description: 'shared lock: conflicts only with exclusive ones' },
] as const satisfies readonly FlagSpec[];

/** Between SIGTERM and SIGKILL when the lease is lost: the lease's margin (at most 5 s) before it lapses. */
const KILL_GRACE_MS = 5000;

/**
 * The command must not outlive run. A SIGKILLed run (the OOM killer, a CI job cancelled hard) can
 * neither stop the command nor release, and its lease lapses only after the TTL: the command would
 * go on working, soon without a lock, while another agent takes the scope. So run starts this
 * watchdog beside the command. It blocks reading a pipe whose only writer is run: end of file means
 * run is gone, and the command gets SIGTERM, then SIGKILL after the same grace as a lost lease.
 * It ignores the signals a terminal or a service manager sends the whole process group (run forwards
 * those itself). While run lives, run SIGKILLs it the moment the command has exited. Once run is
 * dead, nobody keeps the command's pid from being reused, so before each signal the watchdog checks
 * that the pid still has the start time it had when the watchdog began and is no zombie (from /proc;
 * where there is none, that the pid exists). $1 is the command's pid.
 */
const WATCHDOG_SH = `trap '' INT TERM HUP QUIT
born() { { read -r s < "/proc/$1/stat"; } 2>/dev/null || return 0; s=\${s##*) }; set -- $s; [ "$1" = Z ] || echo "\${20}"; }
b=$(born "$1")
same() { kill -0 "$1" 2>/dev/null && [ "$(born "$1")" = "$b" ]; }
read -r _ || :
same "$1" && kill -TERM "$1" 2>/dev/null || exit 0
n=0
while same "$1"; do
  [ "$n" -ge ${KILL_GRACE_MS / 1000} ] && { kill -KILL "$1" 2>/dev/null; exit 0; }
  sleep 1
  n=$((n + 1))
done
exit 0`;
const RUN_TTL_SECONDS = 30;

function exitCodeFlag(raw: string): number {
  const text = raw.trim();
  if (!/^\d+$/.test(text) || Number(text) > 255) {
    throw new AgentLockError(
      'E_USAGE',
      `-E must be an exit code from 0 to 255 (got ${JSON.stringify(raw)})`,
      {
        hint: 'for example -E 75',
      },
    );
  }
  return Number(text);
}

/** run's own words go to stderr (text, or one JSON line with --json): stdout is the command's. */
function toStderr(cli: Cli, answer: Answer): Answer {
  const body = cli.globals().json
    ? `${JSON.stringify(envelope(answer, agentOf(cli), null))}\n`
    : `${answer.text.join('\n')}\n`;
  return { ...answer, raw: { stdout: '', stderr: body } };
}

async function runUnderLock(cli: Cli, scopes: string[], flags: OptionsOf<typeof FLAGS>): Promise<Answer> {
  const command = cli.passthrough ?? [];
  if (command.length === 0 || command[0] === '') {
    throw new AgentLockError('E_USAGE', 'run needs a command after --', {
      hint: `${cli.name} run SCOPE... -- COMMAND [ARGS...]`,
    });
  }
  const conflictCode = flags.conflictExitCode === undefined ? 1 : exitCodeFlag(flags.conflictExitCode);
  const ttlFlag = flags.ttl === undefined ? undefined : parseSeconds(flags.ttl, '--ttl');
  const wait = waitSeconds(flags);
  const locks = await cli.open();
  const ttl = ttlFlag ?? locks.store.config.defaultTtlSeconds ?? RUN_TTL_SECONDS;
  const asked = scopes.map(quoteArg);
  const signals = interruption(cli.io.onSignal);
  try {
    const live = new LiveLine(cli.io.stderr, wait > 0 && cli.io.stderrIsTTY === true, asked.join(' '));
    let held: Awaited<ReturnType<typeof locks.hold>>;
    try {
      held = await locks.hold(scopes, {
        ttl,
        shared: flags.shared === true,
        ...(flags.message !== undefined ? { intent: flags.message } : {}),
        ...(wait > 0 ? { wait, onWait: live.update } : {}),
        signal: signals.signal,
      });
    } catch (error) {
      if (signals.received)
        return toStderr(cli, abortedAnswer(cli, 'run', asked.join(' '), signals.received));
      throw error;
    } finally {
      live.done();
    }
    if (held.lease === undefined) {
      const refused =
        held.status === 'timeout'
          ? timeoutAnswer(cli, 'run', held, asked, wait)
          : held.status === 'other_worktree'
            ? otherWorktreeAnswer(cli, 'run', held, asked)
            : cli.held('run', held, asked);
      if (held.status === 'parent_scope' || held.status === 'interrupted') {
        refused.text[0] = cli.head(held.status, `${asked.join(' ')}: cannot run (${held.status})`);
      }
      return toStderr(cli, { ...refused, exitCode: conflictCode });
    }
    return await runUnder(cli, held.lease, command, signals);
  } finally {
    // Let go only once bin/ knows the answer (see acquire): `run` never dies of a signal after its
    // command has finished and released.
    cli.afterClose(() => signals.dispose());
  }
}

/** Starts WATCHDOG_SH for the command's pid; null where there is no POSIX shell to run it. */
function startWatchdog(spawn: typeof import('node:child_process').spawn, pid: number): ChildProcess | null {
  if (process.platform === 'win32') return null;
  try {
    // stdout and stderr ignored: a pipeline reading run's output must not wait for the watchdog.
    // run's own PATH (not the command's environment), with the usual folders of `sleep` after it.
    const watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SH, 'alock-run-watchdog', String(pid)], {
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { PATH: `${process.env.PATH ? `${process.env.PATH}:` : ''}/usr/bin:/bin` },
    });
    // Without /bin/sh the command runs unwatched, as it would have before; nothing to report.
    watchdog.on('error', () => {});
    watchdog.stdin?.on('error', () => {});
    watchdog.unref();
    return watchdog;
  } catch {
    return null;
  }
}

function stopWatchdog(watchdog: ChildProcess | null): void {
  if (watchdog === null) return;
  // SIGKILL first: once it is delivered the watchdog runs no more, so closing the pipe cannot wake it.
  watchdog.kill('SIGKILL');
  watchdog.stdin?.destroy();
}

async function runUnder(
  cli: Cli,
  lease: Lease,
  command: string[],
  signals: ReturnType<typeof interruption>,
): Promise<Answer> {
  const { spawn } = await import('node:child_process');
  const identity = cli.identity();
  const env: Record<string, string | undefined> = {
    ...cli.io.env,
    // Nested alock calls act as the holder (or, setting their own AGENT_ID, as its child).
    AGENT_ID: identity.agentId,
    AGENT_LOCK_FENCE: lease.fences.join(' '),
    ...(lease.owned ? { AGENT_LOCK_TOKEN: lease.tokens.join(' ') } : {}),
  };
  // `none`, not an absent variable, for a holder without a parent: a nested alock that found
  // AGENT_ID set and no AGENT_PARENT_ID would infer this run process as its parent.
  env.AGENT_PARENT_ID = identity.parentAgentId ?? 'none';

  let lost: LeaseLostError | null = null;
  let killTimer: NodeJS.Timeout | null = null;
  let child: ChildProcess;
  const outcome = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
    (resolve) => {
      try {
        child = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env, cwd: cli.io.cwd });
      } catch (error) {
        resolve({ code: null, signal: null, error: error as Error });
        return;
      }
      const watchdog = child.pid === undefined ? null : startWatchdog(spawn, child.pid);
      // 'error' also comes when a signal cannot be delivered (EPERM: a command that changed its
      // user). The command still runs then: only a failed spawn (no pid) ends the wait.
      child.on('error', (error) => {
        if (child.pid !== undefined) return;
        stopWatchdog(watchdog);
        resolve({ code: null, signal: null, error });
      });
      child.once('exit', (code, signal) => {
        stopWatchdog(watchdog);
        resolve({ code, signal });
      });
      // Signals to run are the command's to handle; run keeps the lease until the command is gone.
      signals.onSignal((sig) => {
        if (child.exitCode === null && child.signalCode === null) child.kill(sig);
      });
      const onLost = () => {
        lost = lease.signal.reason as LeaseLostError;
        cli.io.stderr(
          `${cli.head('lease_lost', `${lease.locks.map((l) => l.scope).join(' ')}: ${lost.message}`)}\n  sending SIGTERM to the command, SIGKILL in ${KILL_GRACE_MS / 1000}s\n`,
        );
        child.kill('SIGTERM');
        killTimer = setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        }, KILL_GRACE_MS);
      };
      if (lease.signal.aborted) onLost();
      else lease.signal.addEventListener('abort', onLost, { once: true });
    },
  );
  if (killTimer) clearTimeout(killTimer);
  let releaseNote = '';
  try {
    await lease.release();
  } catch (error) {
    releaseNote = `could not release: ${(error as Error).message}`;
  }
  const scopesText = lease.locks.map((l) => l.scope).join(' ');
  if (outcome.error) {
    const code = (outcome.error as NodeJS.ErrnoException).code;
    const exitCode = code === 'ENOENT' ? 127 : 126;
    cli.io.stderr(`ERROR: ${cli.name}: cannot run ${quoteArg(command[0]!)}: ${outcome.error.message}\n`);
    return {
      command: 'run',
      status: 'failed',
      exitCode,
      locks: [],
      conflicts: [],
      message: outcome.error.message,
      text: [],
      raw: { stdout: '' },
    };
  }
  if (releaseNote) cli.io.stderr(`WARNING ${releaseNote}\n`);
  const exitCode =
    lost !== null
      ? LEASE_LOST_EXIT
      : outcome.signal !== null
        ? signalExitCode(outcome.signal)
        : (outcome.code ?? 1);
  if (lost !== null) {
    return toStderr(cli, {
      command: 'run',
      status: 'lease_lost',
      exitCode,
      locks: [],
      conflicts: [],
      message: (lost as LeaseLostError).message,
      text: [`${cli.head('lease_lost', `${scopesText}: the command was stopped (exit ${LEASE_LOST_EXIT})`)}`],
    });
  }
  // The command's output is the answer: run adds nothing on success, like flock.
  return {
    command: 'run',
    status: 'ran',
    exitCode,
    locks: lease.locks as Answer['locks'],
    conflicts: [],
    message: `ran ${command[0]} under ${scopesText}`,
    text: [],
    raw: { stdout: '' },
  };
}

export const runCommand = defineCommand({
  name: 'run',
  args: '<scope...>',
  summary:
    "run a command under a lock (flock-style): alock run SCOPE... -- COMMAND [ARGS...]; exits with the command's code",
  flags: FLAGS,
  run: (cli, scopes, o) => runUnderLock(cli, scopes, o),
});
