/**
 * In-process MCP harness: the CLI sandbox (a temp tree and an AGENT_LOCK_DIR store), a CliContext
 * for the server's own agent, and an SDK client linked to the server by the in-memory transport.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CliContext } from '../../src/answers/answer.js';
import { type Identity, resolveIdentity } from '../../src/core/identity.js';
import { ancestorChain, hostName } from '../../src/host/process.js';
import { type Locks, openLocks } from '../../src/locks.js';
import { createLockServer } from '../../src/mcp/server.js';
import { type Envelope, makeSandbox, type Sandbox } from '../cli/cli-harness.js';

export interface Connected {
  readonly sandbox: Sandbox;
  readonly client: Client;
  /** The server's own Locks (what `cli.open()` gave it). */
  readonly serverLocks: () => Promise<Locks>;
  /** Calls a tool; `body` is its structured content (the envelope), `text` its first text block. */
  call(
    name: string,
    args?: Record<string, unknown>,
  ): Promise<{ isError: boolean; body: Envelope; text: string; result: CallToolResult }>;
  /** Calls the `lock` tool and returns its sentence. */
  lock(args: Record<string, unknown>): Promise<{ isError: boolean; text: string }>;
  /** Closes the client; settles once the server has closed its store handle. */
  close(): Promise<void>;
}

export function contextFor(
  sandbox: Sandbox,
  agent: string,
  extraEnv: Record<string, string | undefined> = {},
): CliContext {
  const env = sandbox.envFor(agent, extraEnv);
  let locks: Promise<Locks> | null = null;
  let who: Identity | null = null;
  const context: CliContext = {
    io: { stdout: () => {}, stderr: () => {}, env, cwd: sandbox.tree },
    name: 'alock',
    style: { color: false },
    open: () => {
      locks ??= openLocks({ dir: sandbox.tree, env, identity: context.identity() });
      return locks;
    },
    identity: () => {
      who ??= resolveIdentity(env, ancestorChain(process.pid), hostName());
      return who;
    },
    globals: () => ({}),
  };
  return context;
}

export async function connect(
  agent = 'server',
  sandbox: Sandbox = makeSandbox(),
  extraEnv: Record<string, string | undefined> = {},
): Promise<Connected> {
  const context = contextFor(sandbox, agent, extraEnv);
  const server = createLockServer(context);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'agent-lock-test', version: '0.0.0' });
  await server.mcp.connect(serverSide);
  await client.connect(clientSide);
  const raw = async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const firstText = (result: CallToolResult) => {
    const block = result.content[0];
    return block?.type === 'text' ? block.text : '';
  };
  return {
    sandbox,
    client,
    serverLocks: () => context.open(),
    async call(name, args = {}) {
      const result = await raw(name, args);
      return {
        isError: result.isError === true,
        body: result.structuredContent as unknown as Envelope,
        text: firstText(result),
        result,
      };
    },
    async lock(args) {
      const result = await raw('lock', args);
      return { isError: result.isError === true, text: firstText(result) };
    },
    async close() {
      await client.close();
      await server.closed;
    },
  };
}
