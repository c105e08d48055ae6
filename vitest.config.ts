import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Race and crash suites spawn many real processes; on two cores they must not run in parallel.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
