/**
 * The contract's verbs as MCP tools. Each answers with the CLI's `--json` envelope as structured
 * output; a refusal (an exit-1 answer) and an error are tool errors carrying that same envelope, so
 * an agent reads one shape whichever way it talks to agent-lock.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { CommandName, DecidedStatus } from '../answers/contract.js';
import { envelope, errorAnswer } from '../answers/envelope.js';
import {
  acquireMessage,
  askMessage,
  breakMessage,
  checkMessage,
  listMessage,
  noteMessage,
  releaseMessage,
  renewMessage,
  replyMessage,
  resumeMessage,
} from '../answers/messages.js';
import { answerOf } from '../answers/outcome.js';
import type { Outcome } from '../core/decide.js';
import { AgentLockError } from '../core/errors.js';
import { withEnforceAsRoot } from '../host/freeze.js';
import { hintAskers, leaveMailHint } from '../integrations/mail.js';
import type { Locks } from '../locks.js';
import { type Agents, asAgentLockError } from './agents.js';

/**
 * Every contract tool answers with the same envelope, and a tool list carries each tool's schema in
 * full: the whole envelope (lock fields twice) on nine tools made the list 40 KB, paid in context by
 * every agent on every session. So each tool names only the two fields an agent branches on; the
 * rest of the envelope (and a lock's fields) is described once, in the server's instructions.
 */
export const envelopeSchema = z.looseObject({ status: z.string(), ok: z.boolean() });

const scopes = z.array(z.string()).describe('paths, globs or @resources');
const agentId = z.string().optional().describe('act as this sub-agent');
const token = z.string().optional().describe('lease token from acquire');
/** A tool call that blocks longer than this would outlast the usual MCP client request timeouts. */
const MAX_WAIT_SECONDS = 300;
const ttl = z.number().int().optional().describe('lease, whole seconds');

/** `extra`: fields beside the envelope's, as the CLI's (the queue of list and mine). */
type Said<C extends CommandName> = {
  outcome: Outcome<DecidedStatus<C>>;
  message: string;
  extra?: Record<string, unknown>;
};

function toolResult(body: ReturnType<typeof envelope>, isError: boolean): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body,
    ...(isError ? { isError: true } : {}),
  };
}

/** Runs one verb as the named agent and turns its outcome (or failure) into the envelope. */
async function answer<C extends CommandName>(
  agents: Agents,
  command: C,
  agent: string | undefined,
  verb: (locks: Locks) => Promise<Said<C>>,
): Promise<CallToolResult> {
  try {
    const locks = await agents.forAgent(agent);
    const { outcome, message, extra } = await verb(locks);
    const said = answerOf(command, outcome, message, [], extra);
    return toolResult(envelope(said, locks.agent, null), said.exitCode !== 0);
  } catch (error) {
    const failure = asAgentLockError(error);
    const blank = errorAnswer(
      command,
      failure.hint ? `${failure.message} (${failure.hint})` : failure.message,
    );
    return toolResult(envelope(blank, agents.describe(agent), failure), true);
  }
}

export function registerContractTools(server: McpServer, agents: Agents): void {
  const outputSchema = envelopeSchema;

  server.registerTool(
    'acquire',
    {
      title: 'Claim scopes',
      description:
        'Claim scopes before writing them, all or nothing. A refusal (held, parent_scope, interrupted) is a tool error naming the holders.',
      inputSchema: z.strictObject({
        scopes,
        intent: z.string().optional().describe('what you will do'),
        ttl,
        shared: z.boolean().optional(),
        enforce: z.boolean().optional().describe('files read-only until release'),
        force: z.boolean().optional().describe('enforce over 500 files'),
        wait: z
          .number()
          .min(0)
          .max(MAX_WAIT_SECONDS)
          .optional()
          .describe('seconds to wait in line, else timeout'),
        agent_id: agentId,
      }),
      outputSchema,
    },
    (args, extra) =>
      answer(agents, 'acquire', args.agent_id, async (locks) => {
        const taken = await locks.acquire(args.scopes, {
          ...(args.wait !== undefined ? { wait: args.wait } : {}),
          // A client that cancels the call (or times out, or goes away) stops the wait: its place
          // in line goes, and a grant that raced the cancel is given back. Nobody would get its token.
          signal: extra.signal,
          ...(args.intent !== undefined ? { intent: args.intent } : {}),
          ...(args.ttl !== undefined ? { ttl: args.ttl } : {}),
          shared: args.shared === true,
          enforce: args.enforce === true,
          force: args.force === true,
        });
        const outcome = withEnforceAsRoot(taken, args.enforce === true);
        return { outcome, message: acquireMessage(outcome, args.scopes.join(' '), args.wait ?? 0) };
      }),
  );

  server.registerTool(
    'release',
    {
      title: 'Release locks',
      description: "Release your (or your sub-agents') locks on exactly these scopes, or all: true.",
      inputSchema: z.strictObject({
        scopes: scopes.optional(),
        all: z.boolean().optional(),
        token,
        agent_id: agentId,
      }),
      outputSchema,
    },
    (args) =>
      answer(agents, 'release', args.agent_id, async (locks) => {
        const list = args.scopes ?? [];
        if (args.all && list.length > 0) throw usage('release takes scopes or all, not both');
        if (!args.all && list.length === 0) throw usage('release needs scopes or all: true');
        const outcome = await locks.release(
          args.all ? { all: true } : list,
          args.token ? { token: args.token } : {},
        );
        // Whoever asked about a lock that ended hears it on its next tool call, as after the CLI's.
        hintAskers(agents.env, outcome.locks, locks.tree.root);
        return { outcome, message: releaseMessage(outcome, args.all ? 'all' : list.join(' ')) };
      }),
  );

  server.registerTool(
    'renew',
    {
      title: 'Renew leases',
      description: 'Extend the lease of your locks (ttl: new length).',
      inputSchema: z.strictObject({ scopes, ttl, token, agent_id: agentId }),
      outputSchema,
    },
    (args) =>
      answer(agents, 'renew', args.agent_id, async (locks) => {
        const outcome = await locks.renew(args.scopes, {
          ...(args.ttl !== undefined ? { ttl: args.ttl } : {}),
          ...(args.token ? { token: args.token } : {}),
        });
        return { outcome, message: renewMessage(outcome, args.scopes.join(' ')) };
      }),
  );

  server.registerTool(
    'check',
    {
      title: 'Check scopes',
      description: 'Would these scopes be granted? free, mine, or held (a tool error).',
      inputSchema: z.strictObject({
        scopes,
        shared: z.boolean().optional(),
        agent_id: agentId,
      }),
      outputSchema,
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(agents, 'check', args.agent_id, async (locks) => {
        const outcome = await locks.check(args.scopes, { shared: args.shared === true });
        return { outcome, message: checkMessage(outcome, args.scopes.join(' ')) };
      }),
  );

  server.registerTool(
    'list',
    {
      title: 'List locks',
      description: 'Every lock in the store, and in waiting the queued requests.',
      inputSchema: z.strictObject({}),
      outputSchema,
      annotations: { readOnlyHint: true },
    },
    () =>
      answer(agents, 'list', undefined, async (locks) => {
        const outcome = await locks.list();
        return { outcome, message: listMessage(outcome), extra: { waiting: outcome.waiting } };
      }),
  );

  server.registerTool(
    'mine',
    {
      title: 'My locks',
      description: "Your locks and your sub-agents'.",
      inputSchema: z.strictObject({ agent_id: agentId }),
      outputSchema,
      annotations: { readOnlyHint: true },
    },
    (args) =>
      answer(agents, 'mine', args.agent_id, async (locks) => {
        const outcome = await locks.mine();
        return {
          outcome,
          message: listMessage(outcome, locks.agent.id),
          extra: { waiting: outcome.waiting },
        };
      }),
  );

  server.registerTool(
    'note',
    {
      title: 'Note progress',
      description: 'Write a progress note into your lock, for whoever resumes it.',
      inputSchema: z.strictObject({
        scope: z.string(),
        text: z.string(),
        token,
        agent_id: agentId,
      }),
      outputSchema,
    },
    (args) =>
      answer(agents, 'note', args.agent_id, async (locks) => {
        const outcome = await locks.note(args.scope, args.text, args.token ? { token: args.token } : {});
        return { outcome, message: noteMessage(outcome, args.scope) };
      }),
  );

  server.registerTool(
    'ask',
    {
      title: 'Ask holders',
      description: 'Leave a request for the holders of a scope, told on their next tool call.',
      inputSchema: z.strictObject({ scope: z.string(), text: z.string(), agent_id: agentId }),
      outputSchema,
    },
    (args) =>
      answer(agents, 'ask', args.agent_id, async (locks) => {
        const outcome = await locks.ask(args.scope, args.text);
        // As the CLI's ask: holders on this host hear of it on their next tool call, any tool.
        for (const lock of outcome.locks) leaveMailHint(agents.env, lock.agent_id, locks.tree.root);
        return { outcome, message: askMessage(outcome, args.scope) };
      }),
  );

  server.registerTool(
    'reply',
    {
      title: 'Reply',
      description: 'Answer an agent that asked about your lock.',
      inputSchema: z.strictObject({ agent: z.string(), text: z.string(), agent_id: agentId }),
      outputSchema,
    },
    (args) =>
      answer(agents, 'reply', args.agent_id, async (locks) => {
        const outcome = await locks.reply(args.agent, args.text);
        if (outcome.status === 'replied') leaveMailHint(agents.env, args.agent, locks.tree.root);
        return { outcome, message: replyMessage(outcome, args.agent) };
      }),
  );

  server.registerTool(
    'resume',
    {
      title: 'Resume interrupted work',
      description: 'Take over an orphaned lock (holder gone, notes left) on exactly this scope.',
      inputSchema: z.strictObject({ scope: z.string(), agent_id: agentId }),
      outputSchema,
    },
    (args) =>
      answer(agents, 'resume', args.agent_id, async (locks) => {
        const outcome = await locks.resume(args.scope);
        return { outcome, message: resumeMessage(outcome, args.scope) };
      }),
  );

  server.registerTool(
    'break',
    {
      title: 'Break locks',
      description: 'Remove any lock, whoever holds it (recorded). Only for abandoned locks.',
      inputSchema: z.strictObject({
        scopes: scopes.optional(),
        ids: z.array(z.string()).optional().describe('ids of unreadable records'),
        reason: z.string().optional(),
      }),
      outputSchema,
      annotations: { destructiveHint: true },
    },
    (args) =>
      answer(agents, 'break', undefined, async (locks) => {
        const outcome = await locks.breakLock(args.scopes ?? [], {
          ...(args.reason !== undefined ? { reason: args.reason } : {}),
          ids: args.ids ?? [],
        });
        hintAskers(agents.env, outcome.locks, locks.tree.root);
        const asked = [...(args.scopes ?? []), ...(args.ids ?? [])].join(' ');
        return { outcome, message: breakMessage(outcome, asked) };
      }),
  );
}

function usage(message: string): AgentLockError {
  return new AgentLockError('E_USAGE', message);
}
