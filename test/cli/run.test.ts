/**
 * `alock run` and `acquire --wait` as real processes (the built CLI on a real file store): exit
 * codes and signals pass through, every way out releases, a broken lock stops the command, and an
 * interrupted or killed waiter leaves no place in line behind.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI, requireBuild } from '../race/helpers.js';
import { makeSandbox, parseOneJson, type Sandbox } from './cli-harness.js';

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface Running {
  proc: ChildProcessByStdio<null, Readable, Readable>;
  /** Resolves when a stdout line passes `test`. */
  line(test: (line: string) => boolean): Promise<string>;
  done: Promise<Finished>;
}

let sandbox: Sandbox;
beforeEach(() => {
  requireBuild();
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

function start(agent: string, argv: string[], env: Record<string, string> = {}): Running {
  const proc = spawn(process.execPath, [CLI, ...argv], {
    cwd: sandbox.tree,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...sandbox.envFor(agent), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const seen: string[] = [];
  const watchers: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  createInterface({ input: proc.stdout }).on('line', (line) => {
    stdout += `${line}\n`;
    seen.push(line);
    for (const w of [...watchers]) {
      if (w.test(line)) {
        watchers.splice(watchers.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  proc.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<Finished>((resolve) =>
    proc.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return {
    proc,
    done,
    line(test) {
      const found = seen.find(test);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        watchers.push({ test, resolve });
        void done.then((f) => reject(new Error(`exited ${f.code ?? f.signal} first: ${f.stderr}`)));
      });
    },
  };
}

const alock = (agent: string, argv: string[], env: Record<string, string> = {}) =>
  start(agent, argv, env).done;

async function listed(): Promise<{ locks: string[]; waiting: string[] }> {
  const result = await alock('observer', ['--json', 'list']);
  const body = parseOneJson(result.stdout) as unknown as {
    locks: { scope: string; agent_id: string }[];
    waiting: { scope: string; agent_id: string }[];
  };
  return {
    locks: body.locks.map((l) => `${l.agent_id} ${l.scope}`),
    waiting: body.waiting.map((l) => `${l.agent_id} ${l.scope}`),
  };
}

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 25));
}

/** A node one-liner that says `ready` once its handlers are set, then idles. */
const idler = (onTerm: string) => [
  process.execPath,
  '-e',
  `process.on('SIGTERM', () => { ${onTerm} }); console.log('ready'); setInterval(() => {}, 1000);`,
];

describe('alock run', () => {
  it("runs the command under the lock, exports the lease, and exits with the command's code", async () => {
    const script = 'echo "fence=$AGENT_LOCK_FENCE token=$AGENT_LOCK_TOKEN id=$AGENT_ID"; exit 7';
    const result = await alock('A', ['run', '@merge', '--ttl', '20', '--', 'sh', '-c', script]);
    expect(result.code).toBe(7);
    const match = /^fence=(\d+) token=(\S+) id=A$/m.exec(result.stdout);
    expect(match, result.stdout + result.stderr).not.toBeNull();
    expect(Buffer.from(match![2]!, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect((await listed()).locks).toEqual([]);
    expect((await alock('A', ['run', '@merge', '--', 'true'])).code).toBe(0);
  });

  it('holds the scope while the command runs; nested alock calls act as the holder', async () => {
    const nested = `node ${CLI} --json check @merge; node ${CLI} acquire @merge; node ${CLI} --json list`;
    const result = await alock('A', ['run', '@merge', '--', 'sh', '-c', nested]);
    expect(result.code, result.stderr).toBe(0);
    const [check] = result.stdout.split('\n');
    expect(JSON.parse(check!)).toMatchObject({ status: 'mine' });
    expect(result.stdout).toContain('ALREADY YOURS @merge');
    expect(result.stdout).toMatch(/"scope":"@merge","kind":"resource","mode":"exclusive","agent_id":"A"/);
  });

  it('nested alock calls of a holder without a parent act as that holder, not as its child', async () => {
    // AGENT_PARENT_ID=none: before, run removed the variable and the nested call inferred the run
    // process as its parent (`A (child of alock-...)`).
    const nested = `node ${CLI} --json whoami; node ${CLI} --json acquire @merge`;
    const result = await alock('A', ['run', '@merge', '--', 'sh', '-c', nested], { AGENT_PARENT_ID: 'none' });
    expect(result.code, result.stderr).toBe(0);
    const [who, acquired] = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(who.agent).toMatchObject({ id: 'A', parent_id: null });
    expect(acquired).toMatchObject({ status: 'already_mine', agent: { id: 'A', parent_id: null } });
  });

  it('does not run the command when the lock is held: exit 1, or -E CODE', async () => {
    expect((await alock('B', ['acquire', '@merge'])).code).toBe(0);
    const marker = path.join(sandbox.tree, 'ran');
    const refused = await alock('A', ['run', '@merge', '--', 'touch', marker]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^HELD @merge/m);
    expect(refused.stdout).toBe('');
    const custom = await alock('A', ['run', '-E', '9', '@merge', '--', 'touch', marker]);
    expect(custom.code).toBe(9);
    const timed = await alock('A', ['run', '-w', '0.2', '@merge', '--', 'touch', marker]);
    expect(timed.code).toBe(1);
    expect(timed.stderr).toMatch(/^TIMEOUT @merge/m);
    const json = await alock('A', ['--json', 'run', '@merge', '--', 'touch', marker]);
    expect(JSON.parse(json.stderr)).toMatchObject({ command: 'run', status: 'held', exit_code: 1 });
    expect(existsSync(marker)).toBe(false);
  });

  it('waits for the lock with --wait, then runs', async () => {
    expect((await alock('B', ['acquire', '@merge'])).code).toBe(0);
    const run = start('A', ['run', '--wait=60', '@merge', '--', 'sh', '-c', 'echo ran; exit 4']);
    await until(async () => (await listed()).waiting.includes('A @merge'));
    expect((await alock('B', ['release', '@merge'])).code).toBe(0);
    const result = await run.done;
    expect(result.code).toBe(4);
    expect(result.stdout).toBe('ran\n');
    expect(await listed()).toEqual({ locks: [], waiting: [] });
  });

  it('forwards SIGTERM to the command, passes its exit code, and releases', async () => {
    const run = start('A', ['run', '@merge', '--', ...idler('console.log("got TERM"); process.exit(3);')]);
    await run.line((l) => l === 'ready');
    expect((await listed()).locks).toEqual(['A @merge']);
    run.proc.kill('SIGTERM');
    const result = await run.done;
    expect(result.stdout).toContain('got TERM');
    expect(result.code).toBe(3);
    expect((await listed()).locks).toEqual([]);
  });

  it('reports a command killed by a signal as 128+N and releases', async () => {
    const result = await alock('A', ['run', '@merge', '--', 'sh', '-c', 'kill -KILL $$']);
    expect(result.code).toBe(137);
    expect((await listed()).locks).toEqual([]);
    // Any signal, not only the few run forwards: SIGSEGV and SIGABRT are how commands crash.
    for (const name of ['SEGV', 'ABRT', 'USR1'] as const) {
      const killed = await alock('A', ['run', '@merge', '--', 'sh', '-c', `kill -${name} $$`]);
      expect(killed.code).toBe(128 + constants.signals[`SIG${name}`]);
    }
  });

  it('answers 127 for a command that does not exist, and releases', async () => {
    const result = await alock('A', ['run', '@merge', '--', 'no-such-command-here']);
    expect(result.code).toBe(127);
    expect(result.stderr).toMatch(/^ERROR: alock: cannot run no-such-command-here/m);
    expect((await listed()).locks).toEqual([]);
  });

  it('needs a command after --', async () => {
    const result = await alock('A', ['run', '@merge']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/run needs a command after --/);
  });

  it('stops the command with SIGTERM when another agent breaks its lock, and exits 75', async () => {
    const run = start('A', [
      'run',
      '@merge',
      '--ttl',
      '60',
      '--',
      ...idler('console.log("stopping"); process.exit(0);'),
    ]);
    await run.line((l) => l === 'ready');
    expect((await alock('B', ['break', '@merge', '--reason', 'test'])).code).toBe(0);
    const result = await run.done;
    expect(result.stdout).toContain('stopping');
    expect(result.code).toBe(75);
    expect(result.stderr).toMatch(/^LEASE LOST @merge/m);
    expect((await listed()).locks).toEqual([]);
  });

  it('kills a command that ignores SIGTERM after the grace', async () => {
    const run = start('A', ['run', '@merge', '--', ...idler('console.log("ignoring TERM");')]);
    await run.line((l) => l === 'ready');
    expect((await alock('B', ['break', '@merge'])).code).toBe(0);
    await run.line((l) => l === 'ignoring TERM');
    const result = await run.done;
    expect(result.code).toBe(75);
    expect((await alock('B', ['acquire', '@merge'])).code).toBe(0);
  });
});

describe('alock run, SIGKILLed itself', () => {
  /** A node one-liner that prints its pid, and on SIGTERM writes `marker` (and exits unless told to stay). */
  const victim = (marker: string, stay: boolean) => [
    process.execPath,
    '-e',
    `process.on('SIGTERM', () => { require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'TERM'); ${stay ? '' : 'process.exit(0);'} }); console.log('pid ' + process.pid); setInterval(() => {}, 1000);`,
  ];
  it('stops the command: SIGTERM at once, SIGKILL after the grace if it stays', async () => {
    const marker = path.join(sandbox.tree, 'termed');
    const run = start('A', ['run', '@merge', '--', ...victim(marker, true)]);
    const pid = Number((await run.line((l) => l.startsWith('pid '))).slice(4));
    let stillRunning = false;
    try {
      run.proc.kill('SIGKILL');
      // The command holds run's stdout: the pipe closes only once the command is gone too. 20 s is a
      // bound on liveness (the grace is 5 s), not on speed: without a watchdog it never closes.
      const result = await Promise.race([
        run.done,
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000)),
      ]);
      // It ignores SIGTERM: the pipe closing shows the SIGKILL after the grace came too.
      stillRunning = result === null;
      expect(result, 'the command outlived its SIGKILLed run').not.toBeNull();
      expect(readFileSync(marker, 'utf8')).toBe('TERM');
    } finally {
      // Only a command known to run (its stdout still open) is killed here, never a reused pid.
      if (stillRunning) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('acquire --wait', () => {
  it('gets the lock when its holder lets go', async () => {
    expect((await alock('B', ['acquire', '@r'])).code).toBe(0);
    const waiter = start('A', ['acquire', '@r', '--wait']);
    await until(async () => (await listed()).waiting.includes('A @r'));
    expect((await alock('B', ['release', '@r'])).code).toBe(0);
    const result = await waiter.done;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ACQUIRED @r/m);
    expect(await listed()).toEqual({ locks: ['A @r'], waiting: [] });
  });

  it('reads a number after --wait (with a space) as its value, for acquire and run', async () => {
    // Before, `--wait 2 @r` waited for ever on a file named 2 and @r.
    const free = await alock('A', ['--json', 'acquire', '--wait', '2', '@r']);
    expect(free.code, free.stderr).toBe(0);
    expect(parseOneJson(free.stdout).locks.map((l) => l.scope)).toEqual(['@r']);
    const ran = await alock('A', ['--json', 'run', '--wait', '1.5', '@s', '--', 'true']);
    expect(ran.code, ran.stderr).toBe(0);
    expect((await listed()).locks).toEqual(['A @r']);

    expect((await alock('B', ['acquire', '@q'])).code).toBe(0);
    const timed = await alock('A', ['acquire', '--wait', '0.3', '@q']);
    expect(timed.code).toBe(1);
    expect(timed.stdout).toMatch(/^TIMEOUT @q/m);
    const runTimed = await alock('A', ['run', '--wait', '0.2', '@q', '--', 'true']);
    expect(runTimed.code).toBe(1);
    expect(runTimed.stderr).toMatch(/^TIMEOUT @q/m);
    // A file named 3 is spelled ./3; a word that is no number stays a scope.
    const file = await alock('A', ['--json', 'acquire', '--wait', './3']);
    expect(file.code, file.stderr).toBe(0);
    expect(parseOneJson(file.stdout).locks.map((l) => l.scope)).toEqual(['3']);
    expect((await listed()).locks.sort()).toEqual(['A 3', 'A @r', 'B @q']);
  });

  it('answers TIMEOUT with exit 1 after the deadline', async () => {
    expect((await alock('B', ['acquire', '@r'])).code).toBe(0);
    const result = await alock('A', ['--json', 'acquire', '@r', '--wait=0.3']);
    expect(result.code).toBe(1);
    expect(parseOneJson(result.stdout)).toMatchObject({ status: 'timeout', ok: false, exit_code: 1 });
    expect((await alock('A', ['acquire', '@r', '-n'])).code).toBe(1);
  });

  it('leaves no place in line when interrupted (SIGINT: exit 130)', async () => {
    expect((await alock('B', ['acquire', '@r'])).code).toBe(0);
    const waiter = start('A', ['acquire', '@r', '-w', '60']);
    await until(async () => (await listed()).waiting.includes('A @r'));
    waiter.proc.kill('SIGINT');
    const result = await waiter.done;
    expect(result.code).toBe(130);
    expect(result.stdout).toMatch(/^ABORTED @r/m);
    expect(await listed()).toEqual({ locks: ['B @r'], waiting: [] });
  });

  it('leaves no place in line when SIGTERMed (exit 143) or SIGKILLed', async () => {
    expect((await alock('B', ['acquire', '@r'])).code).toBe(0);
    const termed = start('A', ['acquire', '@r', '--wait']);
    await until(async () => (await listed()).waiting.includes('A @r'));
    termed.proc.kill('SIGTERM');
    expect((await termed.done).code).toBe(143);
    expect((await listed()).waiting).toEqual([]);

    const killed = start('C', ['acquire', '@r', '--wait']);
    await until(async () => (await listed()).waiting.includes('C @r'));
    killed.proc.kill('SIGKILL');
    await killed.done;
    // The dead waiter's ticket names its process: the next decision reaps it.
    expect((await listed()).waiting).toEqual([]);
  });
});
