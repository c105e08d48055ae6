/**
 * The agents one MCP server speaks for: itself (its identity comes from the environment, like the
 * CLI's) and any agent a call names with `agent_id`, played as a child of the server. Every agent
 * shares the server's store handle and tree, so they all decide inside the same atomic steps.
 */
import path from 'node:path';
import type { CliContext } from '../answers/answer.js';
import { AgentLockError } from '../core/errors.js';
import { validateAgentId } from '../core/identity.js';
import { type Locks, openLocks } from '../locks.js';

export type Agent = { id: string; parentId: string | null };

export class Agents {
  private base: Promise<Locks> | null = null;
  private readonly named = new Map<string, Promise<Locks>>();
  private closed = false;

  constructor(private readonly cli: CliContext) {}

  /** The server's own agent, as the envelope names it. */
  self(): Agent {
    const who = this.cli.identity();
    return { id: who.agentId, parentId: who.parentAgentId };
  }

  /** Who a call acts as, for the envelope of an answer that failed before a store was opened. */
  describe(agentId: string | undefined): Agent | null {
    try {
      const self = this.self();
      return agentId === undefined || agentId === self.id ? self : { id: agentId, parentId: self.id };
    } catch {
      return null;
    }
  }

  /** The Locks acting as `agentId` (the server itself when absent), opened once and cached. */
  async forAgent(agentId: string | undefined): Promise<Locks> {
    if (this.closed) throw new AgentLockError('E_CLOSED', 'the MCP server is shutting down');
    if (this.base === null) {
      const opening = this.cli.open();
      // A store that failed to open (bad environment, busy store) is tried again on the next call.
      opening.catch(() => {
        if (this.base === opening) this.base = null;
      });
      this.base = opening;
    }
    const base = await this.base;
    if (agentId === undefined || agentId === base.agent.id) return base;
    validateAgentId(agentId, 'agent_id');
    let locks = this.named.get(agentId);
    if (locks === undefined) {
      locks = openLocks({
        dir: path.resolve(this.cli.io.cwd, this.cli.globals().dir ?? '.'),
        env: this.cli.io.env,
        // The named agent lives as long as the server's holder does: it is the server's sub-agent.
        identity: { agentId, parentAgentId: base.agent.id, holder: base.identity.holder },
        backend: base.backend,
      });
      // A failed open is not cached: the next call tries again.
      locks.catch(() => this.named.delete(agentId));
      this.named.set(agentId, locks);
    }
    return locks;
  }

  /**
   * Closes the one store handle. The named agents' Locks share it, so they are only forgotten:
   * closing each of them would close the shared handle again.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.named.clear();
    const base = this.base;
    this.base = null;
    if (base) await (await base.catch(() => null))?.close();
  }
}

/** Any failure as the contract's error: ours as is, a file system error as an unreadable store. */
export { asAgentLockError } from '../core/errors.js';
