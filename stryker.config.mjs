// Mutation testing (docs/mutation.md). Run through `npm run mutate [-- src/module.ts ...]`, which
// sets MUTATE_MODULE; this file then mutates that one module and runs only the tests that
// scripts/mutate-map.mjs lists for it.
import { ALL_TESTS_PER_MUTANT, MUTATION_MAP } from './scripts/mutate-map.mjs';

const module = process.env.MUTATE_MODULE;
if (!module || !MUTATION_MAP[module]) {
  throw new Error(`MUTATE_MODULE must be one of: ${Object.keys(MUTATION_MAP).join(', ')}`);
}
const slug = module.replace(/^src\//, '').replace(/\.ts$/, '').replaceAll('/', '-');

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: [module],
  // The test files come from vitest.mutate.config.ts, not from Stryker's `testFiles`: with
  // `testFiles`, Stryker 9.6 activates static mutants only after the module was imported, so
  // they all "survive" (stryker-js issue 6144).
  // per test, except for the modules listed to run every mapped test per mutant
  coverageAnalysis: ALL_TESTS_PER_MUTANT.has(module) ? 'all' : 'perTest',
  // Two cores, shared: one test runner, and generous time-outs on a busy machine.
  concurrency: 1,
  timeoutMS: 10_000,
  timeoutFactor: 2,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${slug}.html` },
  jsonReporter: { fileName: `reports/mutation/${slug}.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  ignorePatterns: ['dist', 'bench', 'data', 'web', 'docs', 'reports', '.tmp', '/.stryker-tmp'],
  // one sandbox directory per run, so two runs (different modules) can share the worktree
  tempDirName: `.stryker-tmp/${slug}`,
  cleanTempDir: 'always',
  thresholds: { high: 90, low: 85, break: null },
};
