/**
 * `alock watch` through a real pseudo-terminal (script(1) from util-linux): the board is asserted on
 * as drawn, after other processes take a lock, queue behind it and release it; q and Ctrl-C quit.
 * Off a terminal it prints one snapshot.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeSandbox, type Sandbox } from './cli-harness.js';

const bin = path.join(fileURLToPath(new URL('../../', import.meta.url)), 'bin', 'alock.js');
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
if (!hasScript && !process.env.CI) {
  process.stderr.write(
    '\nWARNING: script(1) (util-linux) is missing: the alock watch terminal tests are SKIPPED\n\n',
  );
}
const describeTerminal = hasScript || process.env.CI ? describe : describe.skip;

let box: Sandbox;
beforeEach(() => {
  box = makeSandbox();
});
afterEach(() => {
  box.cleanup();
});

function env(agent: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|NO_COLOR$)/.test(key)) clean[key] = value;
  }
  return { ...clean, AGENT_LOCK_DIR: box.store, AGENT_LOCK_REDIS_PROBE: 'off', AGENT_ID: agent, ...extra };
}

function alock(agent: string, args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: box.tree, env: env(agent), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

/** `alock watch` on a pseudo-terminal; `board()` is the last frame drawn, as text. */
function watchOnTerminal(extra: Record<string, string> = {}) {
  const quoted = [process.execPath, bin, 'watch'].map((a) => `'${a}'`).join(' ');
  const child: ChildProcessWithoutNullStreams = spawn(
    'script',
    ['-qfec', `${quoted}; echo "EXIT=$?"`, '/dev/null'],
    {
      cwd: box.tree,
      env: env('watcher', extra),
    },
  );
  let raw = '';
  child.stdout.on('data', (chunk: Buffer) => {
    raw += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    raw += chunk.toString('utf8');
  });
  const board = () => {
    const text = raw.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
    return text.slice(text.lastIndexOf('alock watch '));
  };
  const until = async (check: (frame: string) => boolean) => {
    while (!check(board())) {
      if (child.exitCode !== null) throw new Error(`watch ended early: ${raw}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return board();
  };
  return { child, board, until, raw: () => raw };
}

describeTerminal('alock watch on a terminal', () => {
  it('redraws as a lock is taken, waited for, handed over and released, and quits on q', async () => {
    const w = watchOnTerminal({ NO_COLOR: '1' });
    try {
      await w.until((frame) => frame.includes('no locks held') && frame.includes('q quits'));
      alock('B', ['acquire', '@deploy', '-m', 'ship it', '--ttl', '600']);
      let frame = await w.until((f) => f.includes('ACQUIRED @deploy B'));
      expect(frame).toMatch(
        /resources\n {2}\S+\n {4}@deploy {2}by child B {2}"ship it" {2}\d+s ago {2}fence \d+ {2}TTL \d+m/,
      );
      // A waiter in line, shown in order.
      const waiter = spawn(process.execPath, [bin, 'acquire', '@deploy', '--wait=60', '-m', 'after B'], {
        cwd: box.tree,
        env: env('C'),
      });
      frame = await w.until((f) => f.includes('waiting in line'));
      expect(frame).toMatch(
        /waiting in line, first come first served\n {2}1\. C \(child of \S+\) {2}@deploy {2}"after B"/,
      );
      alock('B', ['release', '@deploy']);
      const [code] = await once(waiter, 'exit');
      expect(code).toBe(0);
      frame = await w.until((f) => f.includes('HANDED OVER @deploy C by B'));
      expect(frame).not.toContain('waiting in line');
      expect(frame).toMatch(/@deploy {2}by child C {2}"after B"/);
      alock('C', ['release', '@deploy']);
      frame = await w.until((f) => f.includes('RELEASED @deploy C'));
      expect(frame).toContain('no locks held');
      expect(w.raw()).not.toMatch(/\u001b\[3\dm/);
    } finally {
      w.child.stdin.write('q');
    }
    await once(w.child, 'exit');
    expect(w.raw()).toContain('EXIT=0');
  });

  it('colours a lease about to lapse on a terminal, and answers 130 to Ctrl-C', async () => {
    alock('A', ['acquire', '@paint', '--ttl', '5']);
    const w = watchOnTerminal();
    await w.until((frame) => frame.includes('@paint'));
    // Colour on a terminal without NO_COLOR: the TTL of a lease about to lapse is red or yellow.
    expect(w.raw()).toMatch(/\u001b\[3[13]mTTL \ds\u001b\[39m/);
    w.child.stdin.write('\u0003');
    await once(w.child, 'exit');
    expect(w.raw()).toContain('EXIT=130');
  });
});

describe('alock watch off a terminal', () => {
  it('prints one snapshot of locks, waiting lines and events, and exits 0', async () => {
    await box.run('A', ['acquire', 'src/a.ts', '-m', 'edit']);
    const r = await box.run('B', ['watch']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^alock watch {2}file \S+ {2}1 lock, 0 waiting/);
    expect(r.stdout).toMatch(/\ntree \S+\n {2}\S+\n {4}src\/a\.ts {2}by child A {2}"edit"/);
    expect(r.stdout).toMatch(/last events\n {2}\d\d:\d\d:\d\d ACQUIRED src\/a\.ts A\n$/);
  });

  it('shows a request and its reply among the events, who asked and what', async () => {
    // Hints for the agents' hooks stay in the sandbox, not the shared temp folder.
    const tmp = { TMPDIR: box.outside };
    await box.run('A', ['acquire', 'src/a.ts', '-m', 'edit']);
    expect((await box.run('B', ['ask', 'src/a.ts', 'please finish'], tmp)).code).toBe(0);
    expect((await box.run('A', ['reply', 'B', 'two minutes'], tmp)).code).toBe(0);
    const r = await box.run('C', ['watch']);
    expect(r.stdout).toMatch(/\d\d:\d\d:\d\d ASKED src\/a\.ts A by B: please finish\n/);
    expect(r.stdout).toMatch(/\d\d:\d\d:\d\d REPLIED src\/a\.ts A: to B: two minutes\n$/);
  });
});
