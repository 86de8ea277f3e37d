import { defineConfig } from 'vitest/config';

// Three tiers (STYLE.md 16): unit = pure logic, no I/O; int = one real system (Kafka, Postgres or
// Temporal from the local stack); e2e = the whole product through the CLI/worker; drill = failures
// that need a 3-broker destination.
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['test/**/*.unit.test.ts'] } },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // The brokers and Postgres are shared; two cores: keep files from starving each other.
          fileParallelism: false,
        },
      },
      {
        // Drills need a stack of another shape (3-broker clusters): scripts/drill.sh.
        test: {
          name: 'drill',
          include: ['test/**/*.drill.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
