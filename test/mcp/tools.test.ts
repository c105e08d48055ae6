/**
 * The MCP tools in-process: an SDK client talks to the server over the in-memory transport, on a
 * real file store in a temp tree. The server's own agent is `lead`; `alice` and `bob` are agents a
 * call names with agent_id (sub-agents of lead).
 */
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostName } from '../../src/host/process.js';
import { openLocks } from '../../src/locks.js';
import { ENVELOPE_FIELDS } from '../cli/cli-harness.js';
import { type Connected, connect } from './mcp-harness.js';

let mcp: Connected;

beforeEach(async () => {
  mcp = await connect('lead');
});

afterEach(async () => {
  await mcp.close();
  mcp.sandbox.cleanup();
});

const CONTRACT_TOOLS = [
  'acquire',
  'release',
  'renew',
  'check',
  'list',
  'mine',
  'note',
  'ask',
  'reply',
  'resume',
  'break',
];

/** Leaves an orphan on `scope`: its holder process is gone, and it left a note. */
async function leaveOrphan(scope: string, noteText: string): Promise<void> {
  const gone = spawnSync(process.execPath, ['-e', '']).pid!;
  const ghost = await openLocks({
    dir: mcp.sandbox.tree,
    env: mcp.sandbox.envFor('ghost'),
    identity: { agentId: 'ghost', holder: { host: hostName(), pid: gone, started: 'long ago' } },
  });
  expect((await ghost.acquire(scope)).status).toBe('acquired');
  expect((await ghost.note(scope, noteText)).status).toBe('noted');
  await ghost.close();
}

describe('tool list', () => {
  it('offers the eleven contract tools with output schemas (status and ok), and the lock tool', async () => {
    const { tools } = await mcp.client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual([...CONTRACT_TOOLS, 'lock'].sort());
    for (const tool of tools.filter((t) => CONTRACT_TOOLS.includes(t.name))) {
      expect(tool.outputSchema?.properties).toHaveProperty('status');
      expect(tool.outputSchema?.properties).toHaveProperty('ok');
    }
    const acquire = tools.find((t) => t.name === 'acquire')!;
    expect(acquire.inputSchema.required).toEqual(['scopes']);
    expect(Object.keys(acquire.inputSchema.properties ?? {}).sort()).toEqual(
      ['agent_id', 'enforce', 'force', 'intent', 'scopes', 'shared', 'ttl', 'wait'].sort(),
    );
    const lock = tools.find((t) => t.name === 'lock')!;
    expect(lock.inputSchema.properties?.action).toMatchObject({
      enum: ['acquire', 'release', 'renew', 'status'],
    });
    expect(lock.inputSchema.properties?.ttl).toMatchObject({ default: 30 });
  });
});

describe('acquire', () => {
  it('answers with the CLI envelope as structured output and as JSON text', async () => {
    const r = await mcp.call('acquire', { scopes: ['src/lib'], intent: 'refactor', ttl: 600 });
    expect(r.isError).toBe(false);
    expect(Object.keys(r.body)).toEqual([...ENVELOPE_FIELDS]);
    expect(r.body).toMatchObject({
      schema: 'agent-lock/v1',
      command: 'acquire',
      status: 'acquired',
      ok: true,
      exit_code: 0,
      agent: { id: 'lead' },
      conflicts: [],
      error: null,
    });
    expect(r.body.locks).toHaveLength(1);
    expect(r.body.locks[0]).toMatchObject({
      scope: 'src/lib/**',
      kind: 'path',
      agent_id: 'lead',
      intent: 'refactor',
      ttl_seconds: 600,
    });
    expect(r.body.locks[0]!.token).toEqual(expect.any(String));
    expect(JSON.parse(r.text)).toEqual(r.body);
  });

  it('freezes the matched files with enforce, and thaws them on release', async () => {
    const file = path.join(mcp.sandbox.tree, 'frozen.txt');
    writeFileSync(file, 'x', { mode: 0o644 });
    const r = await mcp.call('acquire', { scopes: ['frozen.txt'], enforce: true });
    expect(r.body.locks[0]!.frozen_paths).toEqual([file]);
    expect(statSync(file).mode & 0o222).toBe(0);
    await mcp.call('release', { scopes: ['frozen.txt'] });
    expect(statSync(file).mode & 0o777).toBe(0o644);
  });

  it('answers already_mine for a scope inside your own lock', async () => {
    await mcp.call('acquire', { scopes: ['src'] });
    const r = await mcp.call('acquire', { scopes: ['src/lib/a.ts'] });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({ status: 'already_mine', ok: true, exit_code: 0 });
  });

  it('refuses an overlapping scope as a tool error that names the holder', async () => {
    await mcp.call('acquire', { scopes: ['src/lib'], intent: 'refactor', agent_id: 'bob' });
    const r = await mcp.call('acquire', { scopes: ['src/lib/a.ts'], agent_id: 'alice' });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({
      command: 'acquire',
      status: 'held',
      ok: false,
      exit_code: 1,
      agent: { id: 'lead/alice', parent_id: 'lead' },
      locks: [],
      error: null,
    });
    expect(r.body.conflicts[0]).toMatchObject({ agent_id: 'lead/bob', intent: 'refactor' });
    expect(r.body.message).toContain('held by lead/bob');
    expect(JSON.parse(r.text)).toEqual(r.body);
  });

  it("refuses a sub-agent its parent's exact scope (parent_scope)", async () => {
    await mcp.call('acquire', { scopes: ['docs'] });
    const r = await mcp.call('acquire', { scopes: ['docs'], agent_id: 'alice' });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({ status: 'parent_scope', exit_code: 1 });
    expect(r.body.conflicts[0]).toMatchObject({ agent_id: 'lead' });
  });

  it('refuses an orphan on the exact scope as interrupted work', async () => {
    await leaveOrphan('src/lib', 'half way through');
    const r = await mcp.call('acquire', { scopes: ['src/lib'] });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({ status: 'interrupted', exit_code: 1 });
    expect(r.body.conflicts[0]).toMatchObject({ agent_id: 'ghost', status: 'orphaned' });
  });

  it('reports a scope outside the tree as a tool error with the error code', async () => {
    const r = await mcp.call('acquire', { scopes: ['../elsewhere'] });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({
      schema: 'agent-lock/v1',
      command: 'acquire',
      status: 'error',
      ok: false,
      exit_code: 2,
      agent: { id: 'lead' },
      error: { code: 'E_SCOPE_OUTSIDE_TREE' },
    });
    expect(JSON.parse(r.text)).toEqual(r.body);
  });

  it('reports a bad ttl, an empty scope list and a bad agent_id as errors', async () => {
    expect((await mcp.call('acquire', { scopes: ['src'], ttl: 0 })).body.error).toMatchObject({
      code: 'E_TTL_INVALID',
    });
    expect((await mcp.call('acquire', { scopes: [] })).body.error).toMatchObject({ code: 'E_USAGE' });
    const bad = await mcp.call('acquire', { scopes: ['src'], agent_id: 'two words' });
    expect(bad.isError).toBe(true);
    expect(bad.body.error).toMatchObject({ code: 'E_ENV_INVALID' });
    expect(bad.body.error?.message).toContain('agent_id');
  });

  it('rejects arguments of the wrong type before anything runs', async () => {
    const r = await mcp.call('acquire', { scopes: 'src' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/Input validation error/);
    expect((await mcp.call('list')).body.locks).toEqual([]);
  });
});

describe('agents named by agent_id', () => {
  it('waits in line with wait, and is granted once the holder lets go', async () => {
    await mcp.call('acquire', { scopes: ['@deploy'], agent_id: 'bob' });
    const waiting = mcp.call('acquire', { scopes: ['@deploy'], wait: 30, agent_id: 'alice' });
    // Alice's place in line shows in the queue before bob lets go.
    for (let i = 0; i < 200; i++) {
      if (((await mcp.call('list', {})).body.waiting as unknown[] | undefined)?.length) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await mcp.call('list', {})).body.waiting).toMatchObject([
      { scope: '@deploy', agent_id: 'lead/alice' },
    ]);
    await mcp.call('release', { scopes: ['@deploy'], agent_id: 'bob' });
    const granted = await waiting;
    expect(granted.isError).toBe(false);
    expect(granted.body).toMatchObject({
      status: 'acquired',
      locks: [{ scope: '@deploy', agent_id: 'lead/alice' }],
    });
    const timedOut = await mcp.call('acquire', { scopes: ['@deploy'], wait: 0.2, agent_id: 'bob' });
    expect(timedOut.isError).toBe(true);
    expect(timedOut.body).toMatchObject({ status: 'timeout', exit_code: 1 });
    expect((await mcp.call('list', {})).body.waiting ?? []).toEqual([]);
  });

  it('stops waiting when the client cancels the call: no place in line, no lock later', async () => {
    await mcp.call('acquire', { scopes: ['@deploy'], agent_id: 'bob' });
    const cancel = new AbortController();
    const waiting = mcp.client
      .callTool(
        { name: 'acquire', arguments: { scopes: ['@deploy'], wait: 30, agent_id: 'alice' } },
        undefined,
        {
          signal: cancel.signal,
        },
      )
      .then(
        () => 'answered',
        () => 'rejected',
      );
    for (let i = 0; i < 200; i++) {
      if (((await mcp.call('list', {})).body.waiting as unknown[] | undefined)?.length) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await mcp.call('list', {})).body.waiting).toMatchObject([{ agent_id: 'lead/alice' }]);
    cancel.abort();
    expect(await waiting).toBe('rejected');
    // The server hears the cancel and leaves the line; bob's release then hands nothing to alice.
    for (let i = 0; i < 200; i++) {
      if (!((await mcp.call('list', {})).body.waiting as unknown[] | undefined)?.length) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await mcp.call('list', {})).body.waiting ?? []).toEqual([]);
    await mcp.call('release', { scopes: ['@deploy'], agent_id: 'bob' });
    expect((await mcp.call('list', {})).body.locks).toEqual([]);
  });

  it('block each other, each as a sub-agent of the server', async () => {
    const a = await mcp.call('acquire', { scopes: ['src/lib'], agent_id: 'alice' });
    expect(a.body.locks[0]).toMatchObject({ agent_id: 'lead/alice', parent_agent_id: 'lead' });
    const b = await mcp.call('acquire', { scopes: ['docs'], agent_id: 'bob' });
    expect(b.body.status).toBe('acquired');

    const bobBlocked = await mcp.call('acquire', { scopes: ['src'], agent_id: 'bob' });
    expect(bobBlocked.isError).toBe(true);
    expect(bobBlocked.body.conflicts.map((l) => l.agent_id)).toEqual(['lead/alice']);
    const aliceBlocked = await mcp.call('acquire', { scopes: ['docs/guide.md'], agent_id: 'alice' });
    expect(aliceBlocked.isError).toBe(true);
    expect(aliceBlocked.body.conflicts.map((l) => l.agent_id)).toEqual(['lead/bob']);

    const refused = await mcp.call('release', { scopes: ['docs'], agent_id: 'alice' });
    expect(refused.body).toMatchObject({ status: 'refused', exit_code: 1 });
    expect((await mcp.call('mine', { agent_id: 'bob' })).body.locks.map((l) => l.scope)).toEqual(['docs/**']);
  });

  it("lets the server release its sub-agents' locks", async () => {
    await mcp.call('acquire', { scopes: ['src/lib'], agent_id: 'alice' });
    const r = await mcp.call('release', { all: true });
    expect(r.body).toMatchObject({ status: 'released', exit_code: 0 });
    expect(r.body.locks.map((l) => l.agent_id)).toEqual(['lead/alice']);
  });
});

describe('release', () => {
  it('releases your lock, then finds nothing to release', async () => {
    await mcp.call('acquire', { scopes: ['src/lib'] });
    const r = await mcp.call('release', { scopes: ['src/lib'] });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({ command: 'release', status: 'released', exit_code: 0 });
    const again = await mcp.call('release', { scopes: ['src/lib'] });
    expect(again.isError).toBe(true);
    expect(again.body).toMatchObject({ status: 'not_found', exit_code: 1 });
  });

  it("proves ownership with a token from another agent's acquire", async () => {
    const taken = await mcp.call('acquire', { scopes: ['@deploy'], agent_id: 'alice' });
    const token = taken.body.locks[0]!.token as string;
    const r = await mcp.call('release', { scopes: ['@deploy'], token, agent_id: 'bob' });
    expect(r.body.status).toBe('released');
  });

  it('releases everything of yours with all', async () => {
    await mcp.call('acquire', { scopes: ['src/lib', 'docs', '@db'] });
    const r = await mcp.call('release', { all: true });
    expect(r.body.locks).toHaveLength(3);
    expect((await mcp.call('list')).body.locks).toEqual([]);
  });

  it('needs scopes or all, not both and not neither', async () => {
    const neither = await mcp.call('release', {});
    expect(neither.isError).toBe(true);
    expect(neither.body).toMatchObject({ status: 'error', exit_code: 2, error: { code: 'E_USAGE' } });
    const both = await mcp.call('release', { scopes: ['src'], all: true });
    expect(both.body.error).toMatchObject({ code: 'E_USAGE' });
  });
});

describe('renew', () => {
  it('extends a lease, refuses another agent, and misses a scope nobody holds', async () => {
    await mcp.call('acquire', { scopes: ['@build'], ttl: 30 });
    const r = await mcp.call('renew', { scopes: ['@build'], ttl: 120 });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({ status: 'renewed', exit_code: 0 });
    expect(r.body.locks[0]).toMatchObject({ ttl_seconds: 120 });
    expect(r.body.message).toBe('renewed @build for 120s');

    const other = await mcp.call('renew', { scopes: ['@build'], agent_id: 'alice' });
    expect(other.isError).toBe(true);
    expect(other.body).toMatchObject({ status: 'refused', exit_code: 1 });

    const none = await mcp.call('renew', { scopes: ['@nothing'] });
    expect(none.isError).toBe(true);
    expect(none.body).toMatchObject({ status: 'not_found', exit_code: 1 });
  });

  it('answers expired once the lease has lapsed', async () => {
    await mcp.call('acquire', { scopes: ['@brief'], ttl: 1 });
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const r = await mcp.call('renew', { scopes: ['@brief'] });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({ status: 'expired', exit_code: 1 });
  });
});

describe('check, list and mine', () => {
  it('answers free, mine, and held (a tool error)', async () => {
    const free = await mcp.call('check', { scopes: ['src/lib/a.ts'] });
    expect(free.isError).toBe(false);
    expect(free.body).toMatchObject({ command: 'check', status: 'free', exit_code: 0 });

    await mcp.call('acquire', { scopes: ['src/lib'], agent_id: 'alice' });
    const mine = await mcp.call('check', { scopes: ['src/lib/a.ts'], agent_id: 'alice' });
    expect(mine.body).toMatchObject({ status: 'mine', exit_code: 0 });

    const held = await mcp.call('check', { scopes: ['src/lib/a.ts'], agent_id: 'bob' });
    expect(held.isError).toBe(true);
    expect(held.body).toMatchObject({ status: 'held', exit_code: 1 });
    expect(held.body.conflicts[0]).toMatchObject({ agent_id: 'lead/alice' });
  });

  it('lists every lock, and mine lists only the named agent (and its children)', async () => {
    await mcp.call('acquire', { scopes: ['src/lib'], agent_id: 'alice' });
    await mcp.call('acquire', { scopes: ['docs'], agent_id: 'bob' });
    const all = await mcp.call('list');
    expect(all.isError).toBe(false);
    expect(all.body).toMatchObject({ command: 'list', status: 'listed', exit_code: 0 });
    expect(all.body.locks.map((l) => l.agent_id).sort()).toEqual(['lead/alice', 'lead/bob']);
    for (const lock of all.body.locks) expect(lock).not.toHaveProperty('token');

    const alice = await mcp.call('mine', { agent_id: 'alice' });
    expect(alice.body.locks.map((l) => l.scope)).toEqual(['src/lib/**']);
    const lead = await mcp.call('mine');
    expect(lead.body.locks).toHaveLength(2);
  });
});

describe('note', () => {
  it('notes into your own lock, refuses another agent, and misses a scope you do not hold', async () => {
    await mcp.call('acquire', { scopes: ['src/lib'], agent_id: 'alice' });
    const r = await mcp.call('note', { scope: 'src/lib', text: 'parser done', agent_id: 'alice' });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({ command: 'note', status: 'noted', exit_code: 0 });
    expect(r.body.locks[0]!.notes).toMatchObject([{ text: 'parser done' }]);

    const refused = await mcp.call('note', { scope: 'src/lib', text: 'mine now', agent_id: 'bob' });
    expect(refused.isError).toBe(true);
    expect(refused.body).toMatchObject({ status: 'refused', exit_code: 1 });

    const missing = await mcp.call('note', { scope: 'docs', text: 'x', agent_id: 'alice' });
    expect(missing.isError).toBe(true);
    expect(missing.body).toMatchObject({ status: 'not_found', exit_code: 1 });

    const empty = await mcp.call('note', { scope: 'src/lib', text: '  ', agent_id: 'alice' });
    expect(empty.body).toMatchObject({ status: 'error', error: { code: 'E_USAGE' } });
  });
});

describe('resume', () => {
  it('takes over an orphan with its notes and a fresh token', async () => {
    await leaveOrphan('src/lib', 'parser half done');
    const r = await mcp.call('resume', { scope: 'src/lib', agent_id: 'alice' });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({ command: 'resume', status: 'resumed', exit_code: 0 });
    expect(r.body.locks[0]).toMatchObject({ agent_id: 'lead/alice', status: 'active' });
    expect(r.body.locks[0]!.notes).toMatchObject([{ text: 'parser half done' }]);
    expect(r.body.locks[0]!.token).toEqual(expect.any(String));
  });

  it('misses when there is no orphan on the scope', async () => {
    const r = await mcp.call('resume', { scope: 'src/lib' });
    expect(r.isError).toBe(true);
    expect(r.body).toMatchObject({ status: 'not_found', exit_code: 1 });
  });
});

describe('break', () => {
  it("removes another agent's lock, and then finds nothing", async () => {
    await mcp.call('acquire', { scopes: ['src/lib'], agent_id: 'alice' });
    const r = await mcp.call('break', { scopes: ['src/lib'], reason: 'alice crashed' });
    expect(r.isError).toBe(false);
    expect(r.body).toMatchObject({ command: 'break', status: 'broken', exit_code: 0 });
    expect(r.body.locks[0]).toMatchObject({ agent_id: 'lead/alice' });
    expect((await mcp.call('check', { scopes: ['src/lib'], agent_id: 'bob' })).body.status).toBe('free');

    const again = await mcp.call('break', { scopes: ['src/lib'] });
    expect(again.isError).toBe(true);
    expect(again.body).toMatchObject({ status: 'not_found', exit_code: 1 });
  });

  it('breaks by id, and needs a scope or an id', async () => {
    const taken = await mcp.call('acquire', { scopes: ['@db'], agent_id: 'alice' });
    const id = taken.body.locks[0]!.id as string;
    expect((await mcp.call('break', { ids: [id] })).body.status).toBe('broken');
    const nothing = await mcp.call('break', {});
    expect(nothing.body).toMatchObject({ status: 'error', exit_code: 2, error: { code: 'E_USAGE' } });
  });
});

describe('the lock tool', () => {
  it('answers each action in a short sentence', async () => {
    const alice = { agent_id: 'alice' };
    const bob = { agent_id: 'bob' };
    expect((await mcp.lock({ action: 'status', key: 'build' })).text).toBe('@build is free');

    const taken = await mcp.lock({ action: 'acquire', key: 'build', ...alice });
    expect(taken.isError).toBe(false);
    expect(taken.text).toMatch(/^acquired @build \(fence \d+, token \S+\)$/);

    expect((await mcp.lock({ action: 'status', key: 'build', ...alice })).text).toMatch(
      /^@build held by me \((29|30)s left\)$/,
    );
    expect((await mcp.lock({ action: 'status', key: '@build', ...bob })).text).toMatch(
      /^@build held by another holder \(lead\/alice, (29|30)s left\)$/,
    );
    expect((await mcp.lock({ action: 'acquire', key: 'build', ...bob })).text).toMatch(
      /^@build held by lead\/alice, (29|30)s left$/,
    );
    // A sub-agent asking for the server's own lease is told it is its parent's, not someone else's.
    expect((await mcp.lock({ action: 'acquire', key: 'deploy' })).text).toMatch(/^acquired/);
    expect((await mcp.lock({ action: 'acquire', key: 'deploy', ...bob })).text).toBe(
      '@deploy held by your parent agent lead',
    );
    // status agrees with acquire: the parent's lease is not "free" to its sub-agent.
    expect((await mcp.lock({ action: 'status', key: 'deploy', ...bob })).text).toMatch(
      /^@deploy held by your parent agent lead \((29|30)s left\)$/,
    );
    expect((await mcp.lock({ action: 'renew', key: 'build', ttl: 90, ...alice })).text).toBe(
      'renewed @build for 90s',
    );
    expect((await mcp.lock({ action: 'status', key: 'build', ...alice })).text).toMatch(
      /^@build held by me \((89|90)s left\)$/,
    );
    expect((await mcp.lock({ action: 'renew', key: 'build', ...bob })).text).toBe(
      'not held (or owned by someone else)',
    );
    expect((await mcp.lock({ action: 'release', key: 'build', ...bob })).text).toBe(
      'not held (or owned by someone else)',
    );
    expect((await mcp.lock({ action: 'release', key: 'build', ...alice })).text).toBe('released');
    expect((await mcp.lock({ action: 'release', key: 'build', ...alice })).text).toBe(
      'not held (or owned by someone else)',
    );
    expect((await mcp.lock({ action: 'status', key: 'build', ...bob })).text).toBe('@build is free');
  });

  it('takes a lease of 30 seconds by default, visible to the contract tools', async () => {
    await mcp.lock({ action: 'acquire', key: 'deploy', agent_id: 'alice' });
    const listed = await mcp.call('list');
    expect(listed.body.locks).toMatchObject([
      { scope: '@deploy', kind: 'resource', agent_id: 'lead/alice', ttl_seconds: 30 },
    ]);
    const held = await mcp.call('acquire', { scopes: ['@deploy'], agent_id: 'bob' });
    expect(held.body.status).toBe('held');
  });

  it('says a repeated acquire is still yours', async () => {
    await mcp.lock({ action: 'acquire', key: 'build' });
    expect((await mcp.lock({ action: 'acquire', key: 'build' })).text).toMatch(
      /^acquired @build \(already held by me: fence \d+, \d+s left\)$/,
    );
  });

  it('refuses a missing action or key, an unknown action and a TTL of zero or less', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ key: 'build' }, /action is required/],
      [{ action: 'grab', key: 'build' }, /unknown action "grab"/],
      [{ action: 'acquire' }, /key is required/],
      [{ action: 'acquire', key: '  ' }, /key is required/],
      [{ action: 'acquire', key: 'build', ttl: 0 }, /ttl must be more than 0 seconds/],
      [{ action: 'renew', key: 'build', ttl: -5 }, /ttl must be more than 0 seconds/],
      [{ action: 'acquire', key: 'build', ttl: 1.5 }, /ttl must be a whole number of seconds/],
    ];
    for (const [args, message] of cases) {
      const r = await mcp.lock(args);
      expect(r.isError, JSON.stringify(args)).toBe(true);
      expect(r.text, JSON.stringify(args)).toMatch(message);
    }
    expect((await mcp.call('list')).body.locks).toEqual([]);
  });

  it('refuses a key that is a path of the tree, with the way to claim it', async () => {
    writeFileSync(path.join(mcp.sandbox.tree, 'src', 'a.ts'), 'x');
    for (const key of ['src/a.ts', 'src/new.ts', 'src/lib', '*.ts']) {
      const r = await mcp.lock({ action: 'acquire', key });
      expect(r.isError, key).toBe(true);
      expect(r.text).toMatch(
        new RegExp(
          `^error E_USAGE: key ${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is a path in the tree; .*use the acquire tool`,
        ),
      );
    }
    expect((await mcp.call('list')).body.locks).toEqual([]);
    // A name with a slash that names no file, a bare name (even of a folder: `build` is a classic
    // lease), or the @ spelled out, is a resource as before.
    expect((await mcp.lock({ action: 'acquire', key: 'src' })).text).toMatch(/^acquired @src /);
    expect((await mcp.lock({ action: 'acquire', key: 'review/pr-123' })).text).toMatch(
      /^acquired @review\/pr-123 /,
    );
    expect((await mcp.lock({ action: 'acquire', key: '@src/a.ts' })).text).toMatch(/^acquired @src\/a\.ts /);
  });

  it('reports an invalid resource name as a tool error with its code', async () => {
    const r = await mcp.lock({ action: 'acquire', key: 'has space' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/^error E_[A-Z_]+: /);
  });
});

describe('shutdown', () => {
  it('closes the store handle when the transport closes', async () => {
    await mcp.call('acquire', { scopes: ['@db'] });
    const locks = await mcp.serverLocks();
    await mcp.close();
    await expect(locks.list()).rejects.toMatchObject({ code: 'E_CLOSED' });
  });
});
