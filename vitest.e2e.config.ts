import { defineConfig } from 'vitest/config';

// The end-to-end suite: each harness's real binary against our scripted model server. One file per
// harness, run one after another (each harness is a heavy process; two cores are shared).
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.e2e.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    maxWorkers: 1,
    reporters: ['./test/e2e/reporter.ts'],
  },
});
