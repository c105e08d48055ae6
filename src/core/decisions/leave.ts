/** leave: a waiting request that was interrupted or failed gives up its place in line. */
import { Decision, type DecisionContext } from './context.js';
import type { Decided, StoreState } from './outcomes.js';

/** Leaves the line: removes the tickets of an interrupted or failed wait. */
export function decideLeave(
  state: StoreState,
  ctx: DecisionContext,
  req: { hash: string },
): Decided<{ left: number }> {
  const d = Decision.open(state, ctx);
  // Tickets, and locks handed over to the request that its waiter never came to take.
  const mine = d
    .live()
    .filter((r) => (r.status === 'waiting' || r.status === 'active') && r.token_hash === req.hash);
  for (const record of mine) {
    d.remove(record);
    // A lock handed over in line had its event: its end has one too.
    if (record.status === 'active') d.record('released', record, { reason: 'the waiter left' });
  }
  return d.done({ left: mine.length });
}
