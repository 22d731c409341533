import { defineConfig } from 'vitest/config';
import { MUTATION_MAP } from './scripts/mutate-map.mjs';
import base from './vitest.config.js';

// The Vitest config of mutation runs (stryker.config.mjs): only the test files that
// scripts/mutate-map.mjs lists for the module being mutated (MUTATE_MODULE), so that a mutant
// Stryker cannot attribute to single tests (a "static" one, in a module-level constant) still
// runs those tests and no others.
const files: string[] = (MUTATION_MAP as Record<string, string[]>)[process.env.MUTATE_MODULE ?? ''] ?? [];
// The run's time-outs only: no shared browser (no mapped test uses one) and no file order.
export default defineConfig({ test: { testTimeout: base.test?.testTimeout, hookTimeout: base.test?.hookTimeout, include: files } });
