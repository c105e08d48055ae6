/**
 * `alock mcp`: agent-lock as MCP tools over stdio. The tools only turn the library's outcomes into
 * the CLI's JSON envelope (or, for `lock`, a sentence); every decision stays in the library. The
 * CLI imports this module lazily, so the SDK never slows another command's start.
 */
import type { Readable, Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Answer, CliContext } from '../answers/answer.js';
import { Agents } from './agents.js';
import { registerContractTools } from './contract-tools.js';
import { registerLockTool } from './lock-tool.js';

declare const __VERSION__: string;
const VERSION = typeof __VERSION__ === 'string' ? __VERSION__ : '0.0.0-dev';

const INSTRUCTIONS = [
  'agent-lock: advisory locks for agents sharing a checkout.',
  'Acquire the files, folders, globs or @resources you will change before writing; a refusal names the holder and is a tool error: work elsewhere or check later.',
  'Note progress into your lock as you go, and release when done.',
  // A sub-agent's lock blocks its parent too (the family rules); only the parent's locks leave room.
  'Name each sub-agent with agent_id: it acts as <server id>/<name>, a child of this server, so sub-agents block each other (and this server), and may work inside the locks this server holds.',
  // Said once here rather than in every tool's output schema (see contract-tools.ts).
  'Every tool but lock answers with the agent-lock/v1 envelope: {schema, command, status, ok, exit_code, agent: {id, parent_id}, locks, conflicts, message, error: {code, message}, warnings: [{code, message, ...}] (W_OTHER_WORKTREE: another worktree of the repository holds an overlapping path, a merge conflict is likely; it never changes status or ok)};',
  'a lock is {id, scope, kind, mode, agent_id, parent_agent_id, intent, expires_at, ttl_seconds, status, fence, notes, stale, token (yours only)}.',
].join(' ');

export interface LockServer {
  readonly mcp: McpServer;
  /** Settles once the transport has closed and the store handle with it. */
  readonly closed: Promise<void>;
}

/** The MCP server for one context: its identity and store are the context's, as for the CLI. */
export function createLockServer(cli: CliContext): LockServer {
  const mcp = new McpServer({ name: 'agent-lock', version: VERSION }, { instructions: INSTRUCTIONS });
  const agents = new Agents(cli);
  registerContractTools(mcp, agents);
  registerLockTool(mcp, agents);
  const closed = new Promise<void>((resolve) => {
    mcp.server.onclose = () => {
      agents.close().then(resolve, resolve);
    };
  });
  return { mcp, closed };
}

/** Serves on stdio until stdin ends (the client went away) or the transport closes. */
export async function serveMcp(
  cli: CliContext,
  stdio: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
): Promise<Answer> {
  const { mcp, closed } = createLockServer(cli);
  const ended = new Promise<void>((resolve) => {
    stdio.stdin.once('end', resolve);
    stdio.stdin.once('close', resolve);
  });
  await mcp.connect(new StdioServerTransport(stdio.stdin, stdio.stdout));
  await Promise.race([ended, closed]);
  await mcp.close();
  await closed;
  // stdout belonged to the protocol: nothing more may be printed there.
  return {
    command: 'mcp',
    status: 'served',
    exitCode: 0,
    locks: [],
    conflicts: [],
    message: 'served',
    text: [],
    raw: { stdout: '' },
  };
}
