/**
 * The agents one MCP server speaks for: itself (its identity comes from the environment, like the
 * CLI's) and any agent a call names with `agent_id`, played as a child of the server. One store,
 * one session per agent: they all decide inside the same atomic steps, on the same tree.
 */
import type { CliContext } from '../answers/answer.js';
import { AgentLockError } from '../core/errors.js';
import { validateAgentId } from '../core/identity.js';
import { type Locks, locksOf } from '../locks.js';

export type Agent = { id: string; parentId: string | null };

export class Agents {
  private base: Promise<Locks> | null = null;
  private readonly named = new Map<string, Locks>();
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
      // The named agent lives as long as the server's holder does: it is the server's sub-agent.
      locks = locksOf(base.store.as({ agentId, parentAgentId: base.agent.id, holder: base.identity.holder }));
      this.named.set(agentId, locks);
    }
    return locks;
  }

  /**
   * Closes the one store. The named agents' sessions are of it, so they are only forgotten:
   * closing each of them would close the shared store again.
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
