/**
 * Who an `agent_id` names, end to end: two `alock mcp` servers as real processes and the command
 * line beside them, on one file store. A named agent is its server's child, so the same name in two
 * servers (or on the command line) is two agents; and bad identities and arguments are tool errors
 * that change nothing.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Envelope, parseOneJson } from '../cli/cli-harness.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const bin = path.join(repo, 'bin', 'alock.js');

let base: string;
let tree: string;
let store: string;
const clients: Client[] = [];

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-mcp-id-')));
  tree = path.join(base, 'repo');
  store = path.join(base, 'store');
  mkdirSync(path.join(tree, 'src'), { recursive: true });
});

afterAll(async () => {
  for (const client of clients) await client.close();
  rmSync(base, { recursive: true, force: true });
});

function cleanEnv(agent: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(AGENT_|CLAUDE_|CODEX_|GEMINI_|REDIS_URL$|NO_COLOR$)/.test(key)) continue;
    env[key] = value;
  }
  return {
    ...env,
    AGENT_LOCK_DIR: store,
    AGENT_LOCK_REDIS_PROBE: 'off',
    AGENT_ID: agent,
    AGENT_PARENT_ID: 'none',
  };
}

function alock(agent: string, args: string[]): Envelope {
  const r = spawnSync(process.execPath, [bin, '--json', ...args], {
    cwd: tree,
    env: cleanEnv(agent),
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  return parseOneJson(r.stdout);
}

async function server(agent: string) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, 'mcp'],
    cwd: tree,
    env: cleanEnv(agent),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'agent-lock-identity', version: '0.0.0' });
  await client.connect(transport);
  clients.push(client);
  return async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const block = result.content[0];
    return {
      isError: result.isError === true,
      body: result.structuredContent as unknown as Envelope | undefined,
      text: block?.type === 'text' ? block.text : '',
    };
  };
}

const locksNow = () =>
  alock('observer', ['list'])
    .locks.map((l) => `${l.agent_id} ${l.scope}`)
    .sort();

describe('an agent_id names a child of its server', () => {
  it("two servers' `worker`s are two agents: no already_mine, no release of the other's lock", async () => {
    const one = await server('session-one');
    const two = await server('session-two');
    const mine = await one('acquire', { scopes: ['@deploy'], agent_id: 'worker' });
    expect(mine.body).toMatchObject({
      status: 'acquired',
      agent: { id: 'session-one/worker', parent_id: 'session-one' },
    });
    expect(mine.body?.locks[0]).toMatchObject({
      agent_id: 'session-one/worker',
      parent_agent_id: 'session-one',
    });

    const theirs = await two('acquire', { scopes: ['@deploy'], agent_id: 'worker' });
    expect(theirs.isError).toBe(true);
    expect(theirs.body).toMatchObject({ status: 'held', agent: { id: 'session-two/worker' } });
    const release = await two('release', { scopes: ['@deploy'], agent_id: 'worker' });
    expect(release.isError).toBe(true);
    expect(release.body?.status).not.toBe('released');
    expect((await two('lock', { action: 'release', key: 'deploy', agent_id: 'worker' })).text).not.toBe(
      'released',
    );
    expect(locksNow()).toEqual(['session-one/worker @deploy']);

    // The whole id the envelope shows names the same sub-agent.
    const again = await one('acquire', { scopes: ['@deploy'], agent_id: 'session-one/worker' });
    expect(again.body).toMatchObject({ status: 'already_mine' });
    expect((await one('release', { scopes: ['@deploy'], agent_id: 'worker' })).body?.status).toBe('released');
    expect(locksNow()).toEqual([]);
  });

  it("`agent_id: carol` over MCP is not the command line's carol", async () => {
    const one = await server('session-one');
    expect(alock('carol', ['acquire', 'src/a.ts']).status).toBe('acquired');
    const release = await one('release', { scopes: ['src/a.ts'], agent_id: 'carol' });
    expect(release.isError).toBe(true);
    const lease = await one('lock', { action: 'release', key: 'src-a', agent_id: 'carol' });
    expect(lease.text).not.toBe('released');
    const held = await one('acquire', { scopes: ['src/a.ts'], agent_id: 'carol' });
    expect(held.body).toMatchObject({ status: 'held', conflicts: [{ agent_id: 'carol' }] });
    expect(locksNow()).toEqual(['carol src/a.ts']);
    expect(alock('carol', ['release', 'src/a.ts']).status).toBe('released');
  });

  it("a child's lock blocks its server's own acquire, and the server may release it", async () => {
    const one = await server('session-one');
    expect((await one('acquire', { scopes: ['src'], agent_id: 'worker' })).body?.status).toBe('acquired');
    const own = await one('acquire', { scopes: ['src/a.ts'] });
    expect(own.isError).toBe(true);
    expect(own.body).toMatchObject({ status: 'held', conflicts: [{ agent_id: 'session-one/worker' }] });
    expect((await one('release', { scopes: ['src'] })).body?.status).toBe('released');
    expect(locksNow()).toEqual([]);
  });
});

describe('bad identities and arguments over MCP are tool errors that change nothing', () => {
  const bad: [string, string, Record<string, unknown>][] = [
    ['agent_id none', 'acquire', { scopes: ['@x'], agent_id: 'none' }],
    ['agent_id NONE', 'acquire', { scopes: ['@x'], agent_id: 'NONE' }],
    ['agent_id <unknown>', 'acquire', { scopes: ['@x'], agent_id: '<unknown>' }],
    ['agent_id <unknown> on lock', 'lock', { action: 'acquire', key: 'x', agent_id: '<unknown>' }],
    ['agent_id none on lock', 'lock', { action: 'acquire', key: 'x', agent_id: 'none' }],
    ['an unknown argument to acquire', 'acquire', { scopes: ['@x'], tll: 30 }],
    ['an unknown argument to lock', 'lock', { action: 'acquire', key: 'x', tll: 30 }],
    ['an unknown argument to list', 'list', { all: true }],
    ['the key ../../etc', 'lock', { action: 'acquire', key: '../../etc' }],
    ['the key @../x', 'lock', { action: 'acquire', key: '@../x' }],
    ['the key /etc/passwd', 'lock', { action: 'acquire', key: '/etc/passwd' }],
  ];
  let one: Awaited<ReturnType<typeof server>>;
  beforeAll(async () => {
    one = await server('session-bad');
    expect((await one('acquire', { scopes: ['@kept'] })).body?.status).toBe('acquired');
  });
  it.each(bad)('%s', async (_name, tool, args) => {
    const before = alock('observer', ['list']).locks;
    expect(before.map((l) => l.scope)).toEqual(['@kept']);
    const r = await one(tool, args);
    expect(r.isError).toBe(true);
    expect(r.text.split('\n')).toHaveLength(1);
    expect(alock('observer', ['list']).locks).toEqual(before);
  });
});
