/**
 * `lock`: the shape agents know from lease servers, {action, key, ttl}, over the same store. A key
 * is a resource (`build` means `@build`); every answer is one short sentence naming the key. A key
 * that names a file or folder of the tree is refused: an agent that passes `src/a.ts` means the
 * file, and a resource of that name would protect nothing.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { Lock } from '../core/lock.js';
import type { Locks } from '../locks.js';
import { type Agents, asAgentLockError } from './agents.js';

const ACTIONS = ['acquire', 'release', 'renew', 'status'] as const;
type Action = (typeof ACTIONS)[number];

const NOT_HELD = 'not held (or owned by someone else)';

const inputSchema = {
  action: z
    .enum(ACTIONS, {
      error: (issue) =>
        issue.input === undefined
          ? 'action is required (acquire, release, renew or status)'
          : `unknown action ${JSON.stringify(issue.input)} (use acquire, release, renew or status)`,
    })
    .describe('acquire, release, renew, or status'),
  key: z
    .string({ error: 'key is required (the name of the resource to lock)' })
    .trim()
    .min(1, { error: 'key is required (the name of the resource to lock)' })
    .describe('a resource name, e.g. deploy (a file path is refused: use acquire)'),
  ttl: z
    .number({ error: 'ttl must be a number of seconds' })
    .int({ error: 'ttl must be a whole number of seconds' })
    .gt(0, { error: 'ttl must be more than 0 seconds' })
    .default(30)
    .describe('lease in seconds for acquire and renew (default 30)'),
  agent_id: z.string().optional().describe('act as this sub-agent'),
};

function left(lock: Lock | undefined, now: number): string {
  if (lock?.expires_at == null) return 'no TTL';
  return `${Math.max(0, Math.ceil((Date.parse(lock.expires_at) - now) / 1000))}s left`;
}

async function decide(locks: Locks, action: Action, key: string, ttl: number): Promise<string> {
  switch (action) {
    case 'acquire': {
      const outcome = await locks.acquire(key, { ttl });
      const lock = outcome.locks[0];
      if (outcome.status === 'acquired')
        return `acquired ${key} (fence ${lock?.fence}, token ${lock?.token})`;
      if (outcome.status === 'already_mine') {
        return `acquired ${key} (already held by me: fence ${lock?.fence}, ${left(lock, Date.now())})`;
      }
      // The sentence names why, as `acquire` does: a sub-agent's own parent is not "someone else".
      if (outcome.status === 'parent_scope') {
        return `${key} held by your parent agent ${outcome.conflicts[0]?.agent_id ?? ''}`.trimEnd();
      }
      if (outcome.status === 'interrupted')
        return `interrupted work on ${key}: take it over with the resume tool, or discard it with break`;
      return `${key} held by ${whoHolds(outcome.conflicts, Date.now())}`;
    }
    case 'release': {
      const outcome = await locks.release(key);
      return outcome.status === 'released' ? 'released' : NOT_HELD;
    }
    case 'renew': {
      const outcome = await locks.renew(key, { ttl });
      if (outcome.status === 'renewed') return `renewed ${key} for ${ttl}s`;
      // An expired lease is never revived: the holder must take it again, with a new fence.
      if (outcome.status === 'expired') return `${NOT_HELD}: the lease on ${key} expired, acquire it again`;
      return NOT_HELD;
    }
    case 'status': {
      const outcome = await locks.check(key);
      const now = Date.now();
      if (outcome.status === 'held')
        return `${key} held by another holder (${whoHolds(outcome.conflicts, now)})`;
      // A parent's lock does not block its sub-agent's check, but acquire would refuse the exact key
      // (parent_scope): status says so rather than "free".
      const parent = locks.agent.parentId;
      if (outcome.status === 'free' && parent !== null) {
        const theirs = (await locks.list()).locks.find((l) => l.scope === key && l.agent_id === parent);
        if (theirs) return `${key} held by your parent agent ${parent} (${left(theirs, now)})`;
      }
      if (outcome.status === 'free') return `${key} is free`;
      return `${key} held by me (${left(outcome.locks[0], now)})`;
    }
  }
}

/** Who holds it, their intent, and for how long. */
function whoHolds(conflicts: readonly Lock[], now: number): string {
  const first = conflicts[0];
  if (first === undefined) return 'someone else';
  const intent = first.intent ? `, "${first.intent}"` : '';
  const more = conflicts.length > 1 ? ` and ${conflicts.length - 1} more` : '';
  return `${first.agent_id}${intent}, ${left(first, now)}${more}`;
}

/** A key naming a file or folder of the tree (`@` not given): the agent means that path. */
function pathKey(locks: Locks, key: string): string | null {
  const bare = key.replace(/^@/, '');
  if (key.startsWith('@')) return null;
  // A glob is a path the agent means; a bare name (even a folder's: `build` is a classic lease) is not.
  if (/[*?[{]/.test(bare)) return bare;
  if (!/[/.]/.test(bare)) return null;
  // A file that exists, or a path to a file-like name (`src/new.ts`); `review/pr-123` stays a name.
  const fileLike = bare.includes('/') && /\.[A-Za-z0-9]{1,8}$/.test(bare);
  return fileLike || existsSync(path.resolve(locks.tree.root, bare)) ? bare : null;
}

const sentence = (text: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text }],
  ...(isError ? { isError: true } : {}),
});

export function registerLockTool(server: McpServer, agents: Agents): void {
  server.registerTool(
    'lock',
    {
      title: 'Named lease',
      description:
        'A named lease on a resource key: acquire, release, renew (for ttl seconds, default 30) or status. Answers in one sentence.',
      inputSchema,
    },
    async (args) => {
      const key = args.key.startsWith('@') ? args.key : `@${args.key}`;
      try {
        const locks = await agents.forAgent(args.agent_id);
        const file = pathKey(locks, args.key.trim());
        if (file !== null) {
          return sentence(
            `error E_USAGE: key ${file} is a path in the tree; the lock tool locks named resources (use the acquire tool to claim ${file}, or key @${file} for a resource of that name)`,
            true,
          );
        }
        return sentence(await decide(locks, args.action, key, args.ttl));
      } catch (error) {
        const failure = asAgentLockError(error);
        return sentence(`error ${failure.code}: ${failure.message}`, true);
      }
    },
  );
}
