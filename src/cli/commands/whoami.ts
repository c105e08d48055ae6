import type { Answer } from '../../answers/answer.js';
import { paint } from '../../answers/render.js';
import { defineCommand } from '../command.js';
import { type Cli, parentInferred, plainAnswer, storeOf } from '../context.js';

async function whoami(cli: Cli): Promise<Answer> {
  const locks = await cli.open();
  const id = locks.identity;
  const text = [
    `AGENT ${id.agentId} (from ${id.idSource})`,
    parentInferred(id)
      ? `PARENT ${id.parentAgentId} (inferred: the id this process has without AGENT_ID; AGENT_PARENT_ID=none for no parent)`
      : `PARENT ${id.parentAgentId ?? '(none)'}${id.parentAgentId || id.parentSource === 'AGENT_PARENT_ID' ? ` (from ${id.parentSource})` : ''}`,
    `HOLDER pid ${id.holder.pid} (${id.holderName}) on ${id.holder.host}: your locks live as long as it runs`,
    `TREE ${locks.tree.root}${locks.tree.key !== locks.tree.root ? ` (key ${locks.tree.key} from AGENT_LOCK_TREE)` : ''}`,
    `STORE ${locks.store.kind} ${locks.store.location}${locks.store.namespace ? ` namespace ${locks.store.namespace}` : ''}`,
    ...id.warnings.map((w) => `${paint(cli.style, 'yellow', 'WARNING')} ${w}`),
  ];
  return plainAnswer(
    'whoami',
    'identified',
    text,
    {
      identity: {
        agent_id: id.agentId,
        agent_source: id.idSource,
        parent_agent_id: id.parentAgentId,
        parent_source: id.parentSource,
        holder: { ...id.holder, name: id.holderName },
        tree: locks.tree,
        store: storeOf(locks),
        warnings: id.warnings,
      },
    },
    `${id.agentId}`,
  );
}

export const whoamiCommand = defineCommand({
  name: 'whoami',
  args: '',
  summary: 'your agent id, parent, holder process and store',
  flags: [],
  run: (cli) => whoami(cli),
});
