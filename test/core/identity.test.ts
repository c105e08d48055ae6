import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readConfig } from '../../src/core/config.js';
import { AgentLockError } from '../../src/core/errors.js';
import {
  sessionAgentId,
  fingerprint,
  holderProcess,
  isPassThrough,
  type ProcessFacts,
  processAgentId,
  resolveIdentity,
} from '../../src/core/identity.js';

const HOST = 'devbox';

function proc(name: string, pid: number): ProcessFacts {
  return { pid, started: `boot:${pid * 10}`, name, user: '1000' };
}

/** The process chain from the caller upward: a shell, a launcher, then the agent itself. */
const AGENT = proc('claude', 300);
const CHAIN: ProcessFacts[] = [proc('bash', 100), proc('npx', 200), AGENT, proc('systemd', 1)];

function expectedFingerprint(p: ProcessFacts, host = HOST): string {
  const hex = createHash('sha256').update(`${p.pid}|${p.started}|${p.user}|${host}`).digest('hex');
  return `${p.name}-${hex.slice(0, 8)}`;
}

/** `<prefix>-<8 hex of sha256 of the whole id>`: what every id but a random UUID is named by. */
function hashed(prefix: string, sessionId: string): string {
  return `${prefix}-${createHash('sha256').update(sessionId).digest('hex').slice(0, 8)}`;
}

describe('resolveIdentity: agent id precedence', () => {
  const all = {
    AGENT_ID: 'builder',
    CLAUDE_CODE_SESSION_ID: '01234567-89ab-4cde-8f01-23456789abcd',
    CLAUDE_SESSION_ID: 'fedcba98-7654-4321-8fed-cba987654321',
    CODEX_THREAD_ID: 'aaaabbbbccccdddd',
  };

  it('AGENT_ID wins over every session variable', () => {
    const id = resolveIdentity(all, CHAIN, HOST);
    expect(id.agentId).toBe('builder');
    expect(id.idSource).toBe('AGENT_ID');
  });

  it('CLAUDE_CODE_SESSION_ID comes next, as claude-<first 8> of its random UUID', () => {
    const { AGENT_ID: _, ...env } = all;
    const id = resolveIdentity(env, CHAIN, HOST);
    expect(id.agentId).toBe('claude-01234567');
    expect(id.idSource).toBe('CLAUDE_CODE_SESSION_ID');
  });

  it('CLAUDE_SESSION_ID comes after CLAUDE_CODE_SESSION_ID, as claude-<first 8> of its random UUID', () => {
    const id = resolveIdentity(
      { CLAUDE_SESSION_ID: all.CLAUDE_SESSION_ID, CODEX_THREAD_ID: all.CODEX_THREAD_ID },
      CHAIN,
      HOST,
    );
    expect(id.agentId).toBe('claude-fedcba98');
    expect(id.idSource).toBe('CLAUDE_SESSION_ID');
  });

  it('CODEX_THREAD_ID comes after the Claude variables, as codex-<hash of the whole id>', () => {
    const id = resolveIdentity({ CODEX_THREAD_ID: all.CODEX_THREAD_ID }, CHAIN, HOST);
    expect(id.agentId).toBe(hashed('codex', all.CODEX_THREAD_ID));
    expect(id.idSource).toBe('CODEX_THREAD_ID');
  });

  it('Gemini CLI (GEMINI_CLI, or GEMINI_SESSION_ID in its hooks) names the gemini process, not the session', () => {
    // Its shell commands get GEMINI_CLI=1 and no session id; its hook commands the session id.
    const holder = { host: HOST, pid: AGENT.pid, started: AGENT.started };
    for (const env of [{ GEMINI_CLI: '1' }, { GEMINI_SESSION_ID: '5f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f' }]) {
      const id = resolveIdentity(env, CHAIN, HOST);
      expect(id.agentId).toBe(processAgentId('gemini', holder));
      expect(id.agentId).toMatch(/^gemini-[0-9a-f]{8}$/);
    }
    expect(resolveIdentity({ GEMINI_CLI: '1' }, CHAIN, HOST).idSource).toBe('GEMINI_CLI');
    // Another gemini process is another agent; a session variable of another harness comes first.
    const other = [proc('bash', 101), proc('gemini', 301)];
    expect(resolveIdentity({ GEMINI_CLI: '1' }, other, HOST).agentId).not.toBe(
      processAgentId('gemini', holder),
    );
    const codex = resolveIdentity({ GEMINI_CLI: '1', CODEX_THREAD_ID: all.CODEX_THREAD_ID }, CHAIN, HOST);
    expect(codex.agentId).toBe(hashed('codex', all.CODEX_THREAD_ID));
  });

  it('a process-named id depends on the process, its start and its host only', () => {
    const a = processAgentId('gemini', { host: HOST, pid: 300, started: 'boot:3000' });
    expect(processAgentId('gemini', { host: HOST, pid: 300, started: 'boot:3000' })).toBe(a);
    expect(processAgentId('gemini', { host: HOST, pid: 300, started: 'boot:3001' })).not.toBe(a);
    expect(processAgentId('gemini', { host: 'other', pid: 300, started: 'boot:3000' })).not.toBe(a);
    expect(processAgentId('cline', { host: HOST, pid: 300, started: 'boot:3000' })).toBe(
      a.replace('gemini', 'cline'),
    );
  });

  it('OPENCODE_SESSION_ID (set by the OpenCode plugin) names the session as its hook does', () => {
    const session = 'ses_4f3e2d1c0b9aZyXwVuTs';
    const id = resolveIdentity({ OPENCODE_SESSION_ID: session }, CHAIN, HOST);
    expect(id.agentId).toBe(hashed('opencode', session));
    expect(id.idSource).toBe('OPENCODE_SESSION_ID');
    expect(id.parentAgentId).toBeNull();
    // A sub-agent's session: the child of its parent session's agent.
    const child = resolveIdentity(
      { OPENCODE_SESSION_ID: 'ses_child', OPENCODE_PARENT_SESSION_ID: session },
      CHAIN,
      HOST,
    );
    expect(child.agentId).toBe(`${hashed('opencode', session)}-${hashed('x', 'ses_child').slice(2)}`);
    expect(child.parentAgentId).toBe(hashed('opencode', session));
    expect(child.parentSource).toBe('OPENCODE_PARENT_SESSION_ID');
  });

  it('COPILOT_AGENT_SESSION_ID comes after Codex, as its hook names the same session', () => {
    const session = '9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d';
    const id = resolveIdentity({ COPILOT_AGENT_SESSION_ID: session }, CHAIN, HOST);
    expect(id.agentId).toBe('copilot-9a8b7c6d');
    expect(id.idSource).toBe('COPILOT_AGENT_SESSION_ID');
    const codex = resolveIdentity(
      { COPILOT_AGENT_SESSION_ID: session, CODEX_THREAD_ID: all.CODEX_THREAD_ID },
      CHAIN,
      HOST,
    );
    expect(codex.agentId).toBe(hashed('codex', all.CODEX_THREAD_ID));
  });

  it('without any variable the id is a fingerprint of the holder process', () => {
    const id = resolveIdentity({}, CHAIN, HOST);
    expect(id.agentId).toBe(expectedFingerprint(AGENT));
    expect(id.idSource).toBe('process');
  });

  it('empty or blank variables count as unset', () => {
    const id = resolveIdentity(
      { AGENT_ID: '  ', CLAUDE_CODE_SESSION_ID: '', CLAUDE_SESSION_ID: ' ', CODEX_THREAD_ID: 'abcdefghij' },
      CHAIN,
      HOST,
    );
    expect(id.agentId).toBe(hashed('codex', 'abcdefghij'));
  });

  it('names any id that is no random UUID by a hash of all of it, emoji and short ids included', () => {
    const id = resolveIdentity({ CODEX_THREAD_ID: 'abcdefg\u{1F600}xyz' }, CHAIN, HOST);
    expect(id.agentId).toBe(hashed('codex', 'abcdefg\u{1F600}xyz'));
    expect(resolveIdentity({ CLAUDE_CODE_SESSION_ID: 'abc' }, CHAIN, HOST).agentId).toBe(
      hashed('claude', 'abc'),
    );
  });

  it.each([
    ['CODEX_THREAD_ID', 'x y'],
    ['CLAUDE_CODE_SESSION_ID', 'ab\tcd'],
    ['CLAUDE_SESSION_ID', 'bell\u0007'],
  ])('refuses a %s whose first 8 characters make no valid id (%j)', (variable, value) => {
    const error = captureError(() => resolveIdentity({ [variable]: value }, CHAIN, HOST));
    expect(error.code).toBe('E_ENV_INVALID');
    expect(error.message).toContain(variable);
  });

  it.each(['has space', 'tab\there', `${'x'.repeat(201)}`, 'bell\u0007'])(
    'refuses the AGENT_ID %j with E_ENV_INVALID naming the variable',
    (value) => {
      const error = captureError(() => resolveIdentity({ AGENT_ID: value }, CHAIN, HOST));
      expect(error.code).toBe('E_ENV_INVALID');
      expect(error.message).toContain('AGENT_ID');
    },
  );
});

describe('resolveIdentity: parent id', () => {
  it('AGENT_PARENT_ID names the parent', () => {
    const id = resolveIdentity({ AGENT_ID: 'child', AGENT_PARENT_ID: 'boss' }, CHAIN, HOST);
    expect(id.parentAgentId).toBe('boss');
    expect(id.parentSource).toBe('AGENT_PARENT_ID');
  });

  it('AGENT_PARENT_ID wins over the id the process would have had', () => {
    const id = resolveIdentity(
      { AGENT_ID: 'child', AGENT_PARENT_ID: 'boss', CLAUDE_CODE_SESSION_ID: '0123456789' },
      CHAIN,
      HOST,
    );
    expect(id.parentAgentId).toBe('boss');
  });

  it('with AGENT_ID set, the parent is the session id the process would have had', () => {
    const id = resolveIdentity(
      { AGENT_ID: 'child', CLAUDE_CODE_SESSION_ID: '01234567-89ab-4cde-8f01-23456789abcd' },
      CHAIN,
      HOST,
    );
    expect(id.agentId).toBe('child');
    expect(id.parentAgentId).toBe('claude-01234567');
    expect(id.parentSource).toBe('without AGENT_ID');
  });

  it('with AGENT_ID set and no session, the parent is the process fingerprint', () => {
    const id = resolveIdentity({ AGENT_ID: 'child' }, CHAIN, HOST);
    expect(id.parentAgentId).toBe(expectedFingerprint(AGENT));
    expect(id.parentSource).toBe('without AGENT_ID');
  });

  it('without AGENT_ID there is no parent', () => {
    expect(resolveIdentity({ CLAUDE_CODE_SESSION_ID: '0123456789' }, CHAIN, HOST).parentAgentId).toBeNull();
    expect(resolveIdentity({}, CHAIN, HOST).parentAgentId).toBeNull();
  });

  it('refuses a parent equal to the agent id: it would silently drop every family rule', () => {
    const error = captureError(() =>
      resolveIdentity({ AGENT_ID: 'same', AGENT_PARENT_ID: 'same' }, CHAIN, HOST),
    );
    expect(error.code).toBe('E_ENV_INVALID');
    expect(error.message).toBe('AGENT_PARENT_ID equals AGENT_ID (same)');
  });

  it('refuses the reserved ids <unknown> (an unreadable record) and none', () => {
    for (const env of [
      { AGENT_ID: '<unknown>' },
      { AGENT_ID: 'None' },
      { AGENT_ID: 'a', AGENT_PARENT_ID: '<unknown>' },
    ]) {
      const error = captureError(() => resolveIdentity(env, CHAIN, HOST));
      expect(error.code).toBe('E_ENV_INVALID');
      expect(error.message).toMatch(/is reserved$/);
    }
  });

  it('refuses an AGENT_PARENT_ID with whitespace, naming the variable', () => {
    const error = captureError(() => resolveIdentity({ AGENT_ID: 'c', AGENT_PARENT_ID: 'a b' }, CHAIN, HOST));
    expect(error.code).toBe('E_ENV_INVALID');
    expect(error.message).toContain('AGENT_PARENT_ID');
  });
});

describe('resolveIdentity: warnings', () => {
  it('warns that sub-agents of one session would share its id', () => {
    const id = resolveIdentity(
      { CLAUDE_CODE_SESSION_ID: '01234567-89ab-4cde-8f01-23456789abcd' },
      CHAIN,
      HOST,
    );
    expect(id.warnings).toHaveLength(1);
    expect(id.warnings[0]).toContain('claude-01234567');
    expect(id.warnings[0]).toContain('AGENT_ID');
  });

  it.each(['CLAUDE_SESSION_ID', 'CODEX_THREAD_ID'])('warns for a %s session too', (variable) => {
    const id = resolveIdentity({ [variable]: '0123456789' }, CHAIN, HOST);
    expect(id.warnings.some((w) => w.includes('AGENT_ID'))).toBe(true);
  });

  it('does not warn once AGENT_ID tells the sub-agents apart', () => {
    const id = resolveIdentity({ AGENT_ID: 'sub-1', CLAUDE_CODE_SESSION_ID: '0123456789' }, CHAIN, HOST);
    expect(id.warnings).toEqual([]);
  });

  it('does not warn for a process fingerprint (each process has its own)', () => {
    expect(resolveIdentity({}, CHAIN, HOST).warnings).toEqual([]);
  });
});

describe('the holder process', () => {
  it.each([
    'sh',
    'bash',
    '-bash',
    'zsh',
    'fish',
    'dash',
    'npx',
    'npm',
    'pnpm',
    'yarn',
    'bunx',
    'env',
    'timeout',
    'nice',
    'sudo',
  ])('skips %s', (name) => {
    expect(isPassThrough(name)).toBe(true);
  });

  it.each(['node', 'script', 'claude', 'codex', 'python3', 'vim'])('keeps %s as a holder', (name) => {
    expect(isPassThrough(name)).toBe(false);
  });

  it('picks the first process that is neither a shell nor a launcher', () => {
    const chain = [
      proc('sh', 10),
      proc('timeout', 11),
      proc('nice', 12),
      proc('env', 13),
      proc('sudo', 14),
      proc('npm', 15),
      proc('bash', 16),
      proc('worker', 17),
      proc('claude', 18),
    ];
    expect(holderProcess(chain)).toEqual(proc('worker', 17));
    const id = resolveIdentity({}, chain, HOST);
    expect(id.holder).toEqual({ host: HOST, pid: 17, started: 'boot:170' });
    expect(id.holderName).toBe('worker');
  });

  it('a plain script run by node is a holder, not a launcher', () => {
    const chain = [proc('bash', 10), proc('script', 11), proc('bash', 12)];
    expect(resolveIdentity({}, chain, HOST).holder.pid).toBe(11);
  });

  it('the first process holds when it is not a shell', () => {
    expect(resolveIdentity({}, CHAIN.slice(2), HOST).holder.pid).toBe(300);
  });

  it('falls back to the last process when every one is a shell or launcher', () => {
    expect(holderProcess([proc('bash', 10), proc('npx', 11)]).pid).toBe(11);
  });

  it('keeps the holder the same whichever variable names the agent', () => {
    const ids = [{}, { AGENT_ID: 'x' }, { CLAUDE_CODE_SESSION_ID: '0123456789' }].map(
      (env) => resolveIdentity(env, CHAIN, HOST).holder,
    );
    expect(ids[1]).toEqual(ids[0]);
    expect(ids[2]).toEqual(ids[0]);
  });
});

describe('fingerprint', () => {
  it('is <command name>-<8 hex of sha256(pid|start time|user|host)>', () => {
    const p = proc('claude', 4242);
    expect(fingerprint(p, HOST)).toBe(expectedFingerprint(p));
    expect(fingerprint(p, HOST)).toMatch(/^claude-[0-9a-f]{8}$/);
  });

  it('differs when the pid, start time, user or host differ', () => {
    const p = proc('claude', 4242);
    const prints = new Set([
      fingerprint(p, HOST),
      fingerprint({ ...p, pid: 4243 }, HOST),
      fingerprint({ ...p, started: 'boot:1' }, HOST),
      fingerprint({ ...p, user: '0' }, HOST),
      fingerprint(p, 'otherbox'),
    ]);
    expect(prints.size).toBe(5);
  });

  it('is stable for the same process', () => {
    expect(fingerprint(proc('claude', 7), HOST)).toBe(fingerprint(proc('claude', 7), HOST));
  });

  it('keeps a command name with odd characters usable as an id', () => {
    const id = fingerprint(proc('my agent (v2)', 7), HOST);
    expect(id).toMatch(/^[A-Za-z0-9._-]+-[0-9a-f]{8}$/);
  });
});

function captureError(fn: () => unknown): AgentLockError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentLockError);
    return error as AgentLockError;
  }
  throw new Error('expected an AgentLockError');
}

describe('readConfig', () => {
  it('has the documented defaults', () => {
    const config = readConfig({});
    expect(config.staleMs).toBe(120 * 60_000);
    expect(config.defaultTtlSeconds).toBeNull();
    expect(config.mutexTimeoutMs).toBe(15_000);
    expect(config.backend).toBeNull();
    expect(config.tree).toBeNull();
    expect(config.redisUrl).toBeNull();
  });

  it('reads good values', () => {
    const config = readConfig({
      AGENT_LOCK_STALE_MINUTES: '5',
      AGENT_LOCK_TTL_SECONDS: '30',
      AGENT_LOCK_MUTEX_TIMEOUT: '2',
      AGENT_LOCK_BACKEND: 'file',
      AGENT_LOCK_TREE: 'shared-clone',
      AGENT_LOCK_REDIS_URL: 'redis://localhost:6379/1',
    });
    expect(config.staleMs).toBe(5 * 60_000);
    expect(config.defaultTtlSeconds).toBe(30);
    expect(config.mutexTimeoutMs).toBe(2000);
    expect(config.backend).toBe('file');
    expect(config.tree).toBe('shared-clone');
    expect(config.redisUrl).toBe('redis://localhost:6379/1');
  });

  it('AGENT_LOCK_TTL_SECONDS=0 means no default lease', () => {
    expect(readConfig({ AGENT_LOCK_TTL_SECONDS: '0' }).defaultTtlSeconds).toBeNull();
  });

  it('falls back to REDIS_URL', () => {
    expect(readConfig({ REDIS_URL: 'rediss://u:p@host:6380' }).redisUrl).toBe('rediss://u:p@host:6380');
  });

  // [variable, bad value]
  const bad: [string, string][] = [
    ['AGENT_LOCK_STALE_MINUTES', 'abc'],
    ['AGENT_LOCK_STALE_MINUTES', '0'],
    ['AGENT_LOCK_STALE_MINUTES', '-5'],
    ['AGENT_LOCK_STALE_MINUTES', '1e3'],
    ['AGENT_LOCK_STALE_MINUTES', 'Infinity'],
    ['AGENT_LOCK_STALE_MINUTES', '10m'],
    ['AGENT_LOCK_TTL_SECONDS', '-1'],
    ['AGENT_LOCK_TTL_SECONDS', 'abc'],
    ['AGENT_LOCK_TTL_SECONDS', '1.5'],
    ['AGENT_LOCK_TTL_SECONDS', '99999999999'],
    ['AGENT_LOCK_MUTEX_TIMEOUT', '0'],
    ['AGENT_LOCK_MUTEX_TIMEOUT', 'soon'],
    ['AGENT_LOCK_MUTEX_TIMEOUT', '-1'],
    ['AGENT_LOCK_BACKEND', 'mysql'],
    ['AGENT_LOCK_BACKEND', 'memory'],
    ['AGENT_LOCK_BACKEND', 'FILE'],
    ['AGENT_LOCK_TREE', 'has space'],
    ['AGENT_LOCK_TREE', 'x'.repeat(201)],
    ['AGENT_ID', 'a b'],
    ['AGENT_PARENT_ID', 'a\tb'],
    ['AGENT_LOCK_REDIS_URL', 'http://localhost:6379'],
    ['REDIS_URL', 'localhost:6379'],
  ];

  it.each(bad)('refuses %s=%j with E_ENV_INVALID naming the variable', (variable, value) => {
    const error = captureError(() => readConfig({ [variable]: value }));
    expect(error.code).toBe('E_ENV_INVALID');
    expect(error.message).toContain(variable);
  });

  it('names AGENT_LOCK_REDIS_URL, not REDIS_URL, when both are set and the first is bad', () => {
    const error = captureError(() => readConfig({ AGENT_LOCK_REDIS_URL: 'nope', REDIS_URL: 'redis://ok' }));
    expect(error.message).toContain('AGENT_LOCK_REDIS_URL');
  });
});

describe('time-ordered session ids', () => {
  it('names a UUIDv7 session by a hash of the whole id, so sessions started together stay apart', () => {
    const a = sessionAgentId('codex', '0199a1b2-1111-7aaa-8bbb-ccccdddd0001');
    const b = sessionAgentId('codex', '0199a1b2-9999-7aaa-8bbb-ccccdddd0002');
    expect(a).toMatch(/^codex-[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
    expect(a).not.toBe('codex-0199a1b2');
    // Random (v4) ids keep their first 8 characters.
    expect(sessionAgentId('claude', '01234567-89ab-4cde-8f01-23456789abcd')).toBe('claude-01234567');
  });
});

describe('one agent, one id: sessions whose ids share a prefix stay apart', () => {
  // Real shapes: OpenCode `ses_` + time (every session of ~15 min shared `ses_dbad`), Cline's task
  // ids in milliseconds (every run shared `17648753`), Codex's UUIDv7 thread ids.
  it.each([
    ['opencode', 'ses_dbad4f1c2ffeAbCdEfGhIjKlMn', 'ses_dbad4f1d9a01ZyXwVuTsRqPoNm'],
    ['cline', '1764875399123', '1764875399456'],
    ['cline', '01JF3Z8Q9R2S3T4V5W6X7Y8Z9A', '01JF3Z8Q9R2S3T4V5W6X7Y8Z9B'],
    ['codex', '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c'],
  ])('%s: %s and %s are two agents', (prefix, a, b) => {
    expect(sessionAgentId(prefix, a)).not.toBe(sessionAgentId(prefix, b));
    expect(sessionAgentId(prefix, a)).toBe(hashed(prefix, a));
  });
});
