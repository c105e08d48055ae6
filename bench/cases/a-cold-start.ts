// (a) `alock check x` cold start against `node -e 0`, alternating.   target: ratio <= 1.5
import type { BenchCase, Block } from '../case.js';
import { verdict } from '../case.js';
import { TARGETS } from '../settings.js';
import { type SpawnResult, spawnAgainstNode } from '../spawn.js';

export const coldStart: BenchCase<SpawnResult> = {
  id: 'a',
  key: 'coldStart',
  title: 'cold start',
  target: `alock check x / node -e 0 (median) <= ${TARGETS.coldStartMax}x`,
  async run(ctx) {
    const a = spawnAgainstNode(ctx, 'cold', ['check', 'x'], null, TARGETS.coldStartMax);
    const blocks: Block[] = [
      {
        kind: 'table',
        title: `(a) cold start, ${a.runs} runs each, alternating (wall ms of spawn to exit)`,
        header: ['command', 'median ms', 'min ms'],
        rows: [
          ['node -e 0', a.nodeMedianMs.toFixed(2), a.nodeMinMs.toFixed(2)],
          ['alock check x', a.alockMedianMs.toFixed(2), a.alockMinMs.toFixed(2)],
        ],
        verdicts: [{ label: 'ratio alock / node (median)', ratio: a.ratio, target: a.target, pass: a.pass }],
      },
    ];
    if (a.hyperfine !== null) {
      blocks.push({
        kind: 'lines',
        lines: [
          `  hyperfine: node ${a.hyperfine.node.medianMs} ms, alock ${a.hyperfine.alock.medianMs} ms, ratio ${a.hyperfine.ratio}x`,
          '',
        ],
      });
    }
    return { data: a, blocks, summary: { coldStart: verdict(a.pass) }, summaryText: verdict(a.pass) };
  },
};
