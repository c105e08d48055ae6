// (b) acquire+release of one @resource against proper-lockfile, same file system.
//     target: ratio >= 2
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { openLocks } from '../../src/index.js';
import type { BenchCase } from '../case.js';
import { verdict } from '../case.js';
import { expectStatus, timeLoop } from '../loops.js';
import { TARGETS } from '../settings.js';
import { round } from '../stats.js';

export interface RateRow {
  name: string;
  ops: number;
  opsPerSec: number;
  usPerOp: number;
}

export interface ResourceRate {
  contenders: RateRow[];
  ratio: number;
  ratioVsDefault: number;
  target: string;
  pass: boolean;
}

export const resourceRate: BenchCase<ResourceRate> = {
  id: 'b',
  key: 'resourceRate',
  title: 'sequential acquire+release of one lock, same file system',
  target: `agent-lock / proper-lockfile (realpath:false) >= ${TARGETS.rateMin}x`,
  async run(ctx) {
    const { settings } = ctx;
    const { tree, store } = ctx.makeTree('rate');
    const locks = await openLocks({ dir: tree, storeDir: store, identity: { agentId: 'bench' } });
    const target = path.join(ctx.scratch, 'rate', 'resource.txt');
    writeFileSync(target, '');
    const ours = async () => {
      expectStatus(await locks.acquire('@res'), 'acquired', 'acquire @res');
      expectStatus(await locks.release('@res'), 'released', 'release @res');
    };
    // proper-lockfile is measured in its fastest setting (no realpath call) and in its default one.
    const plFast = async () => {
      const release = await lockfile.lock(target, { realpath: false, retries: 0 });
      await release();
    };
    const plDefault = async () => {
      const release = await lockfile.lock(target, { retries: 0 });
      await release();
    };
    const contenders = [
      { name: 'agent-lock acquire+release @res', step: ours, ops: 0, ms: 0 },
      { name: 'proper-lockfile lock+unlock (realpath:false)', step: plFast, ops: 0, ms: 0 },
      { name: 'proper-lockfile lock+unlock (default)', step: plDefault, ops: 0, ms: 0 },
    ];
    for (const c of contenders) {
      for (let i = 0; i < settings.opsWarmup; i++) await c.step();
    }
    // Rounds alternate the contenders so that machine noise spreads over all of them.
    const perRound = Math.ceil(settings.opsMax / settings.rounds);
    for (let r = 0; r < settings.rounds; r++) {
      for (const c of contenders) {
        const { ops, ms } = await timeLoop(c.step, perRound, settings.opsSeconds / settings.rounds);
        c.ops += ops;
        c.ms += ms;
      }
    }
    await locks.close();
    const rows: RateRow[] = contenders.map((c) => ({
      name: c.name,
      ops: c.ops,
      opsPerSec: Math.round((c.ops / c.ms) * 1000),
      usPerOp: round((c.ms / c.ops) * 1000, 1),
    }));
    const [ourRow, fastRow, defaultRow] = rows as [RateRow, RateRow, RateRow];
    const ratio = round(ourRow.opsPerSec / fastRow.opsPerSec);
    const b: ResourceRate = {
      contenders: rows,
      ratio,
      ratioVsDefault: round(ourRow.opsPerSec / defaultRow.opsPerSec),
      target: `>= ${TARGETS.rateMin}x`,
      pass: ratio >= TARGETS.rateMin,
    };
    return {
      data: b,
      blocks: [
        {
          kind: 'table',
          title: '(b) sequential acquire+release of one lock, same file system',
          header: ['contender', 'ops', 'ops/s', 'us/op'],
          rows: b.contenders.map((c) => [c.name, c.ops, c.opsPerSec, c.usPerOp.toFixed(1)]),
          verdicts: [
            {
              label: 'ratio agent-lock / proper-lockfile realpath:false',
              ratio: b.ratio,
              target: b.target,
              pass: b.pass,
            },
            {
              label: 'ratio agent-lock / proper-lockfile default',
              ratio: b.ratioVsDefault,
              target: `>= ${TARGETS.rateMin}x`,
              pass: null,
            },
          ],
        },
      ],
      summary: { resourceRate: verdict(b.pass) },
      summaryText: verdict(b.pass),
    };
  },
};
