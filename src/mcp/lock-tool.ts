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
import { lease } from '../answers/messages.js';
import type { Lock } from '../core/lock.js';
import type { Locks } from '../locks.js';
import { type Agents, asAgentLockError } from './agents.js';

const ACTIONS = ['acquire', 'release', 'renew', 'status'] as const;
type Action = (typeof ACTIONS)[number];

// Strict: an argument the tool does not know (a misspelt `ttl`) is an error, never silently dropped.
const inputSchema = z.strictObject({
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
});

async function decide(locks: Locks, action: Action, key: string, ttl: number): Promise<string> {
  switch (action) {
    case 'acquire':
      return lease.acquire(await locks.acquire(key, { ttl }), key, Date.now());
    case 'release':
      return lease.release(await locks.release(key));
    case 'renew':
      return lease.renew(await locks.renew(key, { ttl }), key, ttl);
    case 'status': {
      const outcome = await locks.check(key);
      const now = Date.now();
      // A parent's lock does not block its sub-agent's check, but acquire would refuse the exact key
      // (parent_scope): status says so rather than "free".
      const parent = locks.agent.parentId;
      let theirs: Lock | undefined;
      if (outcome.status === 'free' && parent !== null)
        theirs = (await locks.list()).locks.find((l) => l.scope === key && l.agent_id === parent);
      return lease.status(outcome, key, now, parent !== null && theirs ? { id: parent, lock: theirs } : null);
    }
  }
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
        // `../../etc`, `/etc/passwd`, `~/x`: a path out of the tree is no resource name, and locking
        // it as one would let the agent think it guarded something.
        if (/^[/~]|(^|\/)\.\.(\/|$)/.test(args.key.trim().replace(/^@/, ''))) {
          return sentence(
            lease.error('E_USAGE', `key ${args.key} is a path, not a name (use a name such as deploy)`),
            true,
          );
        }
        const locks = await agents.forAgent(args.agent_id);
        const file = pathKey(locks, args.key.trim());
        if (file !== null) {
          return sentence(lease.pathKey(file), true);
        }
        return sentence(await decide(locks, args.action, key, args.ttl));
      } catch (error) {
        const failure = asAgentLockError(error);
        return sentence(lease.error(failure.code, failure.message), true);
      }
    },
  );
}
