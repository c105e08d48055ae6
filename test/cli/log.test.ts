/**
 * `alock log`: the history in text and JSON lines, narrowed by agent, scope and time, bad input
 * refused in one line, and `--follow` as a real process seeing another process's lock.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeRedis, redisForSuite } from '../backends/redis/server.js';
import { makeSandbox, type Sandbox } from './cli-harness.js';

const bin = path.join(fileURLToPath(new URL('../../', import.meta.url)), 'bin', 'alock.js');

let box: Sandbox;
beforeEach(() => {
  box = makeSandbox();
});
afterEach(() => {
  box.cleanup();
});

const jsonLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('alock log', () => {
  it('prints the history newest last, as text and as JSON lines with a schema', async () => {
    await box.run('A', ['acquire', 'src/a.ts', '-m', 'edit login']);
    await box.run('B', ['acquire', '@merge']);
    await box.run('A', ['release', 'src/a.ts']);
    const text = await box.run('C', ['log']);
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('LISTED 3 events, newest last');
    expect(lines[1]).toMatch(/^ {2}\d{4}-\d\d-\d\dT\S+Z ACQUIRED src\/a\.ts A .*fence \d+ "edit login"$/);
    expect(lines[2]).toMatch(/ ACQUIRED @merge B /);
    expect(lines[3]).toMatch(/ RELEASED src\/a\.ts A /);
    const json = await box.run('C', ['--json', 'log']);
    expect(json.code).toBe(0);
    const events = jsonLines(json.stdout);
    expect(events.map((e) => [e.schema, e.type, e.scope, e.agent_id])).toEqual([
      ['agent-lock/event/v1', 'acquired', 'src/a.ts', 'A'],
      ['agent-lock/event/v1', 'acquired', '@merge', 'B'],
      ['agent-lock/event/v1', 'released', 'src/a.ts', 'A'],
    ]);
    expect(events[0]).toMatchObject({ intent: 'edit login', kind: 'path', mode: 'exclusive', by: null });
    expect(typeof events[0]!.at).toBe('number');
    expect(typeof events[0]!.id).toBe('string');
  });

  it('narrows by --agent, --scope, --since and --limit', async () => {
    await box.run('A', ['acquire', 'src/a.ts']);
    await box.run('B', ['acquire', 'docs/x.md']);
    await box.run('B', ['acquire', '@merge']);
    const types = async (args: string[]) =>
      jsonLines((await box.run('C', ['--json', 'log', ...args])).stdout).map(
        (e) => `${e.agent_id} ${e.scope}`,
      );
    expect(await types(['--agent', 'B'])).toEqual(['B docs/x.md', 'B @merge']);
    expect(await types(['--scope', 'src/**'])).toEqual(['A src/a.ts']);
    expect(await types(['--scope', '@merge', '--scope', 'docs'])).toEqual(['B docs/x.md', 'B @merge']);
    expect(await types(['--since', '1h'])).toHaveLength(3);
    expect(await types(['--since', '2999-01-01'])).toEqual([]);
    expect(await types(['--since', '2000-01-01T00:00:00Z', '--limit', '1'])).toEqual(['B @merge']);
  });

  it('refuses a bad --since or --limit in one line, exit 2, and changes nothing', async () => {
    await box.run('A', ['acquire', '@keep']);
    for (const args of [
      ['--since', 'yesterday'],
      ['--since', '15 minutes'],
      ['--since', '2026-13-45'],
      ['--limit', '0'],
    ]) {
      const r = await box.run('C', ['log', ...args]);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(r.stderr).toMatch(/^ERROR: alock: --(since|limit) .+ \(.+\)\n$/);
    }
    const after = await box.json('C', ['list']);
    expect(after.body.locks.map((l) => l.scope)).toEqual(['@keep']);
  });
});

/** `alock log --follow --json` as a real process; resolves each JSON line as it comes. */
function follow(env: NodeJS.ProcessEnv, cwd: string) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [bin, '--json', 'log', '--follow'], {
    cwd,
    env,
  });
  const seen: Record<string, unknown>[] = [];
  let buffer = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) seen.push(JSON.parse(line) as Record<string, unknown>);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const until = async (check: () => boolean) => {
    while (!check()) {
      if (child.exitCode !== null) throw new Error(`log --follow ended early (${child.exitCode}): ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { child, seen, until, stderr: () => stderr };
}

function processEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|NO_COLOR$)/.test(key)) env[key] = value;
  }
  return { ...env, ...extra };
}

async function followSeesAnotherProcess(env: NodeJS.ProcessEnv, cwd: string) {
  const alock = (agent: string, args: string[]) => {
    const r = spawnSync(process.execPath, [bin, ...args], {
      cwd,
      env: { ...env, AGENT_ID: agent },
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
  };
  alock('A', ['acquire', '@before']);
  const f = follow({ ...env, AGENT_ID: 'watcher' }, cwd);
  try {
    // The history comes first; then each event as another process commits it.
    await f.until(() => f.seen.length === 1);
    expect(f.seen[0]).toMatchObject({ type: 'acquired', scope: '@before', agent_id: 'A' });
    alock('B', ['acquire', '@deploy', '-m', 'ship it']);
    await f.until(() => f.seen.length === 2);
    expect(f.seen[1]).toMatchObject({
      schema: 'agent-lock/event/v1',
      type: 'acquired',
      scope: '@deploy',
      agent_id: 'B',
      intent: 'ship it',
    });
    alock('B', ['release', '@deploy']);
    await f.until(() => f.seen.length === 3);
    expect(f.seen[2]).toMatchObject({ type: 'released', scope: '@deploy', agent_id: 'B' });
  } finally {
    const running = f.child.exitCode === null && f.child.signalCode === null;
    const exited = running ? once(f.child, 'exit') : Promise.resolve([f.child.exitCode]);
    f.child.kill('SIGINT');
    const [code] = await exited;
    // Ctrl-C ends the follow as every interrupted command ends: 130.
    expect({ code, stderr: f.stderr() }).toEqual({ code: 130, stderr: '' });
  }
  expect(f.seen).toHaveLength(3);
}

describe('alock log --follow', () => {
  it('streams a lock taken and released by another process on the file store', async () => {
    await followSeesAnotherProcess(
      processEnv({ AGENT_LOCK_DIR: box.store, AGENT_LOCK_REDIS_PROBE: 'off' }),
      box.tree,
    );
  });
});

describeRedis('alock log --follow on Redis', () => {
  const server = redisForSuite();
  it('streams a lock taken and released by another process, through pub/sub', async () => {
    await followSeesAnotherProcess(
      processEnv({
        AGENT_LOCK_DIR: box.store,
        AGENT_LOCK_BACKEND: 'redis',
        AGENT_LOCK_REDIS_URL: server().url,
        AGENT_LOCK_REDIS_PREFIX: `follow-${process.pid}-${Date.now()}`,
      }),
      box.tree,
    );
  });
});
