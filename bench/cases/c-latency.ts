// (c) path-scope acquire+release p50 with 10/100/1000 locks held by other agents, file store.
//     target: p50(1000)/p50(10) <= 3
import { openLocks } from '../../src/index.js';
import type { BenchCase } from '../case.js';
import { verdict } from '../case.js';
import { HOLDER_AGENTS, type LatencySeries, latencySeries, latencyTable } from '../loops.js';
import { TARGETS } from '../settings.js';

export const latencyUnderLoad: BenchCase<LatencySeries> = {
  id: 'c',
  key: 'latencyUnderLoad',
  title: 'path-scope latency with K locks held',
  target: `p50(1000)/p50(10) <= ${TARGETS.latencyMax}x`,
  async run(ctx) {
    const c = await latencySeries(
      ctx,
      (k) => {
        const { tree, store } = ctx.makeTree(`held-${k}`);
        return (agentId) => openLocks({ dir: tree, storeDir: store, identity: { agentId } });
      },
      TARGETS.latencyMax,
    );
    return {
      data: c,
      blocks: [
        latencyTable(
          `(c) acquire+release of work/target.txt with K path scopes held by ${HOLDER_AGENTS} other agents`,
          c,
          TARGETS.latencyMax,
        ),
      ],
      summary: { latencyUnderLoad: verdict(c.pass) },
      summaryText: verdict(c.pass),
    };
  },
};
