/**
 * End to end: `node bin/alock.js mcp` spawned by the SDK's stdio client, and the store checked by
 * a separate `alock list --json` process, so the lock is shown to be really in the store.
 */
import { spawn, spawnSync } from 'node:child_process';
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
const _cliBundle = path.join(repo, 'dist', 'cli.js');

let base: string;
let tree: string;
let store: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-mcp-')));
  tree = path.join(base, 'repo');
  store = path.join(base, 'store');
  mkdirSync(path.join(tree, 'src'), { recursive: true });
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

/** The environment without any agent-lock or agent-session setting that could leak in. */
function cleanEnv(agent: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|NO_COLOR$)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, AGENT_LOCK_DIR: store, AGENT_LOCK_REDIS_PROBE: 'off', AGENT_ID: agent };
}

function alockJson(agent: string, args: string[]): Envelope {
  const r = spawnSync(process.execPath, [bin, '--json', ...args], {
    cwd: tree,
    env: cleanEnv(agent),
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  return parseOneJson(r.stdout);
}

async function startServer(agent: string): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, 'mcp'],
    cwd: tree,
    env: cleanEnv(agent),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'agent-lock-e2e', version: '0.0.0' });
  await client.connect(transport);
  return { client, transport };
}

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

describe('alock mcp over stdio', () => {
  it('serves the tools, and its locks are in the store other processes read', async () => {
    const { client, transport } = await startServer('mcp-agent');
    try {
      expect(client.getServerVersion()?.name).toBe('agent-lock');
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(
        expect.arrayContaining([
          'acquire',
          'release',
          'renew',
          'check',
          'list',
          'mine',
          'note',
          'resume',
          'break',
          'lock',
        ]),
      );

      const taken = (await client.callTool({
        name: 'acquire',
        arguments: { scopes: ['src'], intent: 'over stdio' },
      })) as CallToolResult;
      expect(taken.isError).toBeFalsy();
      expect(taken.structuredContent).toMatchObject({ status: 'acquired', agent: { id: 'mcp-agent' } });

      const listed = alockJson('someone-else', ['list']);
      expect(listed.locks).toMatchObject([{ scope: 'src/**', agent_id: 'mcp-agent', intent: 'over stdio' }]);
      const blocked = alockJson('someone-else', ['acquire', 'src/main.ts']);
      expect(blocked).toMatchObject({ status: 'held', exit_code: 1 });

      const released = (await client.callTool({
        name: 'release',
        arguments: { scopes: ['src'] },
      })) as CallToolResult;
      expect(released.structuredContent).toMatchObject({ status: 'released', exit_code: 0 });
      expect(alockJson('someone-else', ['list']).locks).toEqual([]);
    } finally {
      const pid = transport.pid!;
      await client.close();
      await expect.poll(() => gone(pid), { timeout: 5_000 }).toBe(true);
    }
  });

  it('answers the lock tool in sentences over stdio', async () => {
    const { client } = await startServer('mcp-agent');
    try {
      const taken = (await client.callTool({
        name: 'lock',
        arguments: { action: 'acquire', key: 'deploy' },
      })) as CallToolResult;
      expect(taken.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^acquired /) });
      expect(alockJson('someone-else', ['check', '@deploy'])).toMatchObject({ status: 'held' });
      const freed = (await client.callTool({
        name: 'lock',
        arguments: { action: 'release', key: 'deploy' },
      })) as CallToolResult;
      expect(freed.content[0]).toMatchObject({ text: 'released' });
    } finally {
      await client.close();
    }
  });

  it('exits 0 and prints nothing more once stdin ends', async () => {
    const child = spawn(process.execPath, [bin, 'mcp'], { cwd: tree, env: cleanEnv('mcp-agent') });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.stdin.end();
    expect(await exited).toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toBe('');
  });
});
