// Every section of `npm run bench`, in the order they run. A new section is a file in this folder
// exporting a BenchCase, and one line here.
import type { BenchCase } from '../case.js';
import { coldStart } from './a-cold-start.js';
import { resourceRate } from './b-resource-rate.js';
import { latencyUnderLoad } from './c-latency.js';
import { redisResourceRate } from './d-redis-rate.js';
import { redisLatencyUnderLoad } from './e-redis-latency.js';
import { handoffCase } from './f-handoff.js';
import { globs } from './g-globs.js';
import { hookCalls } from './h-hook-calls.js';
import { events } from './i-events.js';
import { conflicts } from './j-conflicts.js';
import { scaling } from './k-scaling.js';
import { claimsOnEdit } from './l-claims.js';

export const CASES: readonly BenchCase[] = [
  coldStart,
  resourceRate,
  latencyUnderLoad,
  redisResourceRate,
  redisLatencyUnderLoad,
  handoffCase,
  globs,
  hookCalls,
  events,
  conflicts,
  scaling,
  claimsOnEdit,
];
