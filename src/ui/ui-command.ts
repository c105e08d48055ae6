/**
 * `alock ui`: the command around serveDashboard. Apart from the library function so that the
 * library's types never reach the CLI's (a TypeScript user without @types/node compiles them).
 */
import { spawn } from 'node:child_process';
import type { Answer, CliContext } from '../answers/answer.js';
import { interruption, signalExitCode } from '../answers/interruption.js';
import { AgentLockError } from '../core/errors.js';
import { serveDashboard } from './dashboard.js';

export interface UiFlags {
  port?: string;
  host?: string;
  allowRemote?: boolean;
  allowBreak?: boolean;
  open?: boolean;
}

/** `alock ui`: serves until a signal, after printing the URL (the only place the secret is shown). */
export async function openDashboard(cli: CliContext, o: UiFlags): Promise<Answer> {
  let port = 0;
  if (o.port !== undefined) {
    port = Number(o.port);
    if (!/^\d+$/.test(o.port) || port > 65535) {
      throw new AgentLockError(
        'E_USAGE',
        `--port must be a whole number from 0 to 65535 (got ${JSON.stringify(o.port)})`,
        {
          hint: 'for example --port 7777, or 0 for any free port',
        },
      );
    }
  }
  const locks = await cli.open();
  const stopped = interruption(cli.io.onSignal);
  const dashboard = await serveDashboard(locks, {
    port,
    ...(o.host === undefined ? {} : { host: o.host }),
    allowRemote: o.allowRemote === true,
    allowBreak: o.allowBreak === true,
  });
  cli.io.stdout(
    `UI ${dashboard.url}\n  ${o.allowBreak ? 'breaks allowed to whoever has this URL (its secret)' : 'read-only'}; Ctrl-C stops\n`,
  );
  if (o.open) {
    const opener =
      process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
    const child = spawn(opener, [dashboard.url], { stdio: 'ignore', detached: true });
    child.on('error', () => cli.io.stderr(`could not start ${opener}: open ${dashboard.url} yourself\n`));
    child.unref();
  }
  try {
    await new Promise<void>((resolve) => {
      if (stopped.signal.aborted) resolve();
      stopped.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    stopped.dispose();
    await dashboard.close();
  }
  const signal = stopped.received ?? 'SIGINT';
  return {
    command: 'ui',
    status: 'aborted',
    exitCode: signalExitCode(signal),
    locks: [],
    conflicts: [],
    message: `served until ${signal}`,
    text: [],
    raw: { stdout: '' },
  };
}
