/**
 * A real process that takes `src/**` with --enforce (freezing its files), notes it when asked, says
 * `acquired`, then waits to be killed: the holder the enforce and git-guard tests SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';

const repo = path.resolve(import.meta.dirname, '../..');

/** Starts the holder and resolves with it and what it said (`acquired` once it holds). */
export async function enforceHolder(
  tree: string,
  store: string,
  withNote: boolean,
): Promise<{ child: ChildProcess; said: string }> {
  const script = `
    import { openLocks } from ${JSON.stringify(path.join(repo, 'dist/index.js'))};
    const locks = await openLocks({ dir: ${JSON.stringify(tree)}, storeDir: ${JSON.stringify(store)}, identity: { agentId: 'doomed' }, env: {} });
    const won = await locks.acquire('src/**', { enforce: true });
    if (${withNote}) await locks.note('src/**', 'halfway through');
    console.log(won.status);
    setInterval(() => {}, 60000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const said = await new Promise<string>((resolve) =>
    child.stdout!.once('data', (d: Buffer) => resolve(String(d).trim())),
  );
  return { child, said };
}

/** SIGKILLs the holder and waits until it is gone. */
export async function killHolder(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}
