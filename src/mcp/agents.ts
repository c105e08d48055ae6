/**
 * The agents one MCP server speaks for: itself (its identity comes from the environment, like the
 * CLI's) and any agent a call names with `agent_id`, played as a child of the server under the id
 * `<server>/<name>`. One store, one session per agent: they all decide inside the same atomic
 * steps, on the same tree.
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

  /** The server's environment (where the hooks' hints live: integrations/mail.ts). */
  get env(): Readonly<Record<string, string | undefined>> {
    return this.cli.io.env;
  }

  /** The server's own agent, as the envelope names it. */
  self(): Agent {
    const who = this.cli.identity();
    return { id: who.agentId, parentId: who.parentAgentId };
  }

  /** Who a call acts as, for the envelope of an answer that failed before a store was opened. */
  describe(agentId: string | undefined): Agent | null {
    try {
      const self = this.self();
      return agentId === undefined || agentId === self.id
        ? self
        : { id: namedAgentId(self.id, agentId), parentId: self.id };
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
    const id = namedAgentId(base.agent.id, agentId);
    let locks = this.named.get(id);
    if (locks === undefined) {
      // The named agent lives as long as the server's holder does: it is the server's sub-agent.
      locks = locksOf(
        base.store.as({ agentId: id, parentAgentId: base.agent.id, holder: base.identity.holder }),
      );
      this.named.set(id, locks);
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

/**
 * The id of the sub-agent a call names: `<server's id>/<name>`. A bare name would be one agent in
 * every server that uses it, and the same as a command-line agent of that name: two sessions'
 * `worker`s would own each other's locks, and `agent_id: carol` could release the shell's carol's.
 * The whole id, as the envelope shows it, names the same sub-agent.
 */
export function namedAgentId(serverId: string, name: string): string {
  validateAgentId(name, 'agent_id');
  if (name.startsWith(`${serverId}/`) && name.length > serverId.length + 1) return name;
  return validateAgentId(`${serverId}/${name}`, "agent_id (with its server's id before it)");
}

/** Any failure as the contract's error: ours as is, a file system error as an unreadable store. */
export { asAgentLockError } from '../core/errors.js';
