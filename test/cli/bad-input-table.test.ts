/**
 * Bad input across every surface, as one table: the command line's arguments and flags, the
 * environment, the MCP tools (a real `alock mcp` process) and the harness hook payloads (real hook
 * processes). Each answers with one line (the CLI: `ERROR: alock: what (what to do)`, exit 2; MCP:
 * a tool error; a hook: its harness's deny answer, fail closed), prints no stack, and leaves every
 * byte of the store as it was. The count of inputs tried is printed.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSandbox, type Sandbox, STACK_FRAME } from './cli-harness.js';

const bin = path.join(fileURLToPath(new URL('../../', import.meta.url)), 'bin', 'alock.js');

let box: Sandbox;
let tried = 0;

beforeAll(async () => {
  box = makeSandbox();
  for (const argv of [
    ['acquire', 'src/a.ts', '-m', 'seeded'],
    ['acquire', '@merge', '--ttl', '600'],
  ]) {
    expect((await box.run('A', argv, { AGENT_PARENT_ID: 'none' })).code).toBe(0);
  }
});

afterAll(() => {
  process.stdout.write(`bad-input table: ${tried} inputs tried, each one line, nothing changed\n`);
  box.cleanup();
});

/** Every file of the store and its bytes: a bad input must change none of them. */
function storeBytes(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else
        out[path.relative(box.store, full)] = createHash('sha256').update(readFileSync(full)).digest('hex');
    }
  };
  walk(box.store);
  return out;
}

const FREE = 'lib/new.ts';
type Env = Record<string, string | undefined>;
interface CliCase {
  name: string;
  argv: string[];
  env?: Env;
}

const BAD_SCOPES = [
  '',
  '   ',
  '../x.ts',
  '/etc/passwd',
  'src/**/../x',
  'src/a\u0007.ts',
  '@',
  '@a b',
  '../**',
  '.git/config',
];
const SCOPE_COMMANDS: [string, (scope: string) => string[]][] = [
  ['acquire', (s) => ['acquire', s]],
  ['acquire with a good one', (s) => ['acquire', FREE, s]],
  ['check', (s) => ['check', s]],
  ['release', (s) => ['release', s]],
  ['renew', (s) => ['renew', s]],
  ['note', (s) => ['note', s, 'text']],
  ['run', (s) => ['run', s, '--', 'true']],
];
const BAD_TTLS = ['0', '-5', 'abc', '1.5', ' 5', '5 ', '99999999999', '1e3', '0x10', ''];
const BAD_WAITS = ['abc', '-1', '1e3', '1,5', 'Infinity'];

const cliCases: CliCase[] = [
  ...SCOPE_COMMANDS.flatMap(([command, argv]) =>
    BAD_SCOPES.map((scope) => ({ name: `${command} scope ${JSON.stringify(scope)}`, argv: argv(scope) })),
  ),
  ...BAD_TTLS.flatMap((ttl) => [
    { name: `acquire --ttl ${JSON.stringify(ttl)}`, argv: ['acquire', FREE, '--ttl', ttl] },
    { name: `renew --ttl ${JSON.stringify(ttl)}`, argv: ['renew', '@merge', '--ttl', ttl] },
    { name: `run --ttl ${JSON.stringify(ttl)}`, argv: ['run', FREE, '--ttl', ttl, '--', 'true'] },
  ]),
  ...BAD_WAITS.flatMap((wait) => [
    { name: `acquire --wait=${wait}`, argv: ['acquire', FREE, `--wait=${wait}`] },
    { name: `acquire -w ${wait}`, argv: ['acquire', FREE, '-w', wait] },
    { name: `run --wait=${wait}`, argv: ['run', FREE, `--wait=${wait}`, '--', 'true'] },
    { name: `run -w ${wait}`, argv: ['run', FREE, '-w', wait, '--', 'true'] },
  ]),
  { name: "--dir ''", argv: ['--dir', '', 'acquire', FREE] },
  { name: "--dir '  '", argv: ['--dir', '  ', 'acquire', FREE] },
  { name: '--dir that does not exist', argv: ['--dir', '/no/such/folder', 'acquire', FREE] },
  { name: '--backend bogus', argv: ['--backend', 'bogus', 'acquire', FREE] },
  { name: 'an unknown flag', argv: ['acquire', FREE, '--frobnicate'] },
  { name: 'an unknown global flag', argv: ['--frobnicate', 'list'] },
  { name: 'an unknown command', argv: ['frobnicate'] },
  { name: 'acquire without a scope', argv: ['acquire'] },
  { name: '--wait with nothing after it but a number', argv: ['acquire', '--wait', '3'] },
  { name: '--force without --enforce', argv: ['acquire', FREE, '--force'] },
  { name: 'release a scope and --all', argv: ['release', FREE, '--all'] },
  { name: 'note with blank text', argv: ['note', 'src/a.ts', '  '] },
  { name: 'list with an extra argument', argv: ['list', 'extra'] },
  { name: 'run without a command', argv: ['run', FREE, '--'] },
  { name: 'break without a scope or id', argv: ['break'] },
];

const ENV_CASES: [string, string][] = [
  ['AGENT_ID', '<unknown>'],
  ['AGENT_ID', 'none'],
  ['AGENT_ID', 'NONE'],
  ['AGENT_ID', 'a b'],
  ['AGENT_ID', 'x'.repeat(201)],
  ['AGENT_ID', 'bell\u0007'],
  ['AGENT_PARENT_ID', '<unknown>'],
  ['AGENT_PARENT_ID', 'the boss'],
  ['AGENT_PARENT_ID', 'A'],
  ['AGENT_LOCK_DIR', 'relative/store'],
  ['AGENT_LOCK_DIR', './store'],
  ['AGENT_LOCK_DIR', '~/store'],
  ['AGENT_LOCK_TREE', ''],
  ['AGENT_LOCK_TREE', '   '],
  ['AGENT_LOCK_TREE', 'my tree'],
  ['AGENT_LOCK_TTL_SECONDS', '-1'],
  ['AGENT_LOCK_TTL_SECONDS', 'abc'],
  ['AGENT_LOCK_TTL_SECONDS', '1.5'],
  ['AGENT_LOCK_STALE_MINUTES', '0'],
  ['AGENT_LOCK_STALE_MINUTES', 'abc'],
  ['AGENT_LOCK_MUTEX_TIMEOUT', '0'],
  ['AGENT_LOCK_MUTEX_TIMEOUT', 'soon'],
  ['AGENT_LOCK_BACKEND', 'postgres'],
  ['AGENT_LOCK_REDIS_PROBE', 'nope'],
  ['AGENT_LOCK_REDIS_PROBE', 'host:99999'],
  ['AGENT_LOCK_REDIS_PREFIX', 'bad prefix'],
  ['AGENT_LOCK_REDIS_TIMEOUT', '-3'],
  ['AGENT_LOCK_WORKTREES', 'maybe'],
  ['AGENT_LOCK_REDIS_URL', 'http://x'],
  ['REDIS_URL', 'ftp://x'],
];
for (const [variable, value] of ENV_CASES) {
  cliCases.push({
    name: `${variable}=${JSON.stringify(value).slice(0, 30)}`,
    argv: ['acquire', FREE],
    env: { [variable]: value },
  });
}

describe('bad input on the command line and in the environment', () => {
  it.each(cliCases)('$name', async (c) => {
    tried++;
    const before = storeBytes();
    const r = await box.run('A', c.argv, { AGENT_PARENT_ID: 'none', ...c.env });
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(/^ERROR: alock: .+ \(.+\)\n$/);
    expect(STACK_FRAME.test(r.stderr)).toBe(false);
    expect(storeBytes()).toEqual(before);
  });
});

describe('bad input to the MCP tools of a real alock mcp', () => {
  let client: Client;
  beforeAll(async () => {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (value !== undefined && !/^(AGENT_|CLAUDE_|CODEX_|GEMINI_|REDIS_URL$)/.test(key)) env[key] = value;
    }
    client = new Client({ name: 'bad-input', version: '0.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [bin, 'mcp'],
        cwd: box.tree,
        env: { ...env, ...(box.envFor('mcp-server', { AGENT_PARENT_ID: 'none' }) as Record<string, string>) },
        stderr: 'pipe',
      }),
    );
  }, 60_000);
  afterAll(async () => {
    await client.close();
  });

  const ids = ['none', 'None', '<unknown>', 'a b', '', 'x'.repeat(201), 'tab\there'];
  const tools: [string, Record<string, unknown>][] = [
    ['acquire', { scopes: ['@x'] }],
    ['release', { scopes: ['@merge'] }],
    ['renew', { scopes: ['@merge'] }],
    ['check', { scopes: ['@x'] }],
    ['mine', {}],
    ['note', { scope: 'src/a.ts', text: 'x' }],
    ['resume', { scope: 'src/a.ts' }],
    ['lock', { action: 'status', key: 'x' }],
  ];
  const mcpCases: [string, string, Record<string, unknown>][] = [
    ...ids.flatMap((id) =>
      tools
        .slice(0, 4)
        .map(
          ([tool, args]) =>
            [`${tool} agent_id ${JSON.stringify(id).slice(0, 20)}`, tool, { ...args, agent_id: id }] as [
              string,
              string,
              Record<string, unknown>,
            ],
        ),
    ),
    ...tools.map(
      ([tool, args]) =>
        [`${tool} with an unknown argument`, tool, { ...args, bogus: 1 }] as [
          string,
          string,
          Record<string, unknown>,
        ],
    ),
    ['list with an unknown argument', 'list', { all: true }],
    ['break with an unknown argument', 'break', { scopes: ['@merge'], forcefully: true }],
    ['acquire scopes as a string', 'acquire', { scopes: '@x' }],
    ['acquire no scopes', 'acquire', { scopes: [] }],
    ['acquire scope ../x', 'acquire', { scopes: ['../x'] }],
    ['acquire scope /etc/passwd', 'acquire', { scopes: ['/etc/passwd'] }],
    ['acquire scope empty', 'acquire', { scopes: [''] }],
    ['acquire ttl -1', 'acquire', { scopes: ['@x'], ttl: -1 }],
    ['acquire ttl 1.5', 'acquire', { scopes: ['@x'], ttl: 1.5 }],
    ['acquire wait 1000', 'acquire', { scopes: ['@x'], wait: 1000 }],
    ['acquire wait -1', 'acquire', { scopes: ['@x'], wait: -1 }],
    ['lock action steal', 'lock', { action: 'steal', key: 'x' }],
    ['lock key empty', 'lock', { action: 'acquire', key: '' }],
    ['lock key ../../etc', 'lock', { action: 'acquire', key: '../../etc' }],
    ['lock key /etc', 'lock', { action: 'acquire', key: '/etc' }],
    ['lock ttl 0', 'lock', { action: 'acquire', key: 'x', ttl: 0 }],
    ['lock ttl 2.5', 'lock', { action: 'acquire', key: 'x', ttl: 2.5 }],
  ];
  it.each(mcpCases)('%s', async (_name, tool, args) => {
    tried++;
    const before = storeBytes();
    const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
    expect(result.isError).toBe(true);
    const block = result.content[0];
    const text = block?.type === 'text' ? block.text : '';
    expect(text.split('\n')).toHaveLength(1);
    expect(STACK_FRAME.test(text)).toBe(false);
    expect(storeBytes()).toEqual(before);
  });
});

describe('bad hook payloads: a deny answer in the harness shape, one line, nothing changed', () => {
  const payloads: [string, string][] = [
    ['empty', ''],
    ['not JSON', 'nope'],
    ['an array', '[]'],
    ['null', 'null'],
    ['a number', '42'],
    ['an empty object', '{}'],
    ['a truncated object', '{"session_id":"s","tool_name":"Write"'],
  ];
  const harnesses = ['claude', 'codex', 'gemini', 'cursor', 'opencode', 'copilot', 'cline'];
  const hookCases = harnesses.flatMap((h) =>
    payloads.map(([name, body]) => [`${h}: ${name}`, h, body] as const),
  );
  hookCases.push([
    'claude: Write with a numeric file_path',
    'claude',
    JSON.stringify({
      session_id: 's',
      hook_event_name: 'PreToolUse',
      tool_name: 'Write',
      tool_input: { file_path: 42 },
    }),
  ]);
  it.each(hookCases)('%s', (_name, harness, body) => {
    tried++;
    const before = storeBytes();
    const r = spawnSync(process.execPath, [bin, 'hooks', `${harness}-pre-tool-use`], {
      cwd: box.tree,
      input: body,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        AGENT_LOCK_DIR: box.store,
        AGENT_LOCK_REDIS_PROBE: 'off',
      },
      encoding: 'utf8',
    });
    // The harness protocol: exit 0 with a deny decision on stdout (fail closed), one line.
    expect(r.status).toBe(0);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stdout).toMatch(/deny|"cancel":true/);
    expect(r.stdout).toContain('could not check this tool call');
    expect(STACK_FRAME.test(r.stdout + r.stderr)).toBe(false);
    expect(storeBytes()).toEqual(before);
  });
});
