// (e) (c) on Redis: path-scope acquire+release p50 with 10/100/1000 locks held.
//     target: p50(1000)/p50(10) <= 3
import type { BenchCase, NotRun } from '../case.js';
import { notRun, status } from '../case.js';
import { HOLDER_AGENTS, type LatencySeries, latencySeries, latencyTable, openRedisLocks } from '../loops.js';
import { TARGETS } from '../settings.js';

const TITLE = `(e) on Redis: acquire+release of work/target.txt with K path scopes held by ${HOLDER_AGENTS} other agents`;

export const redisLatencyUnderLoad: BenchCase<({ ran: true } & LatencySeries) | NotRun> = {
  id: 'e',
  key: 'redisLatencyUnderLoad',
  title: 'path-scope latency with K locks held, on Redis',
  target: `p50(1000)/p50(10) <= ${TARGETS.redisLatencyMax}x`,
  async run(ctx) {
    const { server, reason, announce } = await ctx.redis();
    if (server === null) {
      const e = notRun(reason);
      return {
        data: e,
        blocks: [{ kind: 'notRun', title: TITLE, reason }],
        summary: { redisLatencyUnderLoad: status(e) },
        summaryText: status(e),
      };
    }
    const series = await latencySeries(
      ctx,
      (k) => {
        const dirs = ctx.makeTree(`redis-held-${k}`);
        return (agentId) => openRedisLocks(ctx, server, `held-${k}`, agentId, dirs);
      },
      TARGETS.redisLatencyMax,
    );
    const e = { ran: true as const, ...series };
    return {
      data: e,
      blocks: [...announce, latencyTable(TITLE, series, TARGETS.redisLatencyMax)],
      summary: { redisLatencyUnderLoad: status(e) },
      summaryText: status(e),
    };
  },
};
