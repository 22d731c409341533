#!/usr/bin/env node
// npm run mutate                      -> every module of scripts/mutate-map.mjs, smallest first
// npm run mutate -- src/ticket/code.ts -> that module only (several may be named)
// Each module is one Stryker run (concurrency 1, under `nice`), with its own HTML and JSON report
// in reports/mutation/; a summary line per module is printed at the end. Not part of CI.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { MUTATION_MAP, MUTATION_ORDER } from './mutate-map.mjs';

const args = process.argv.slice(2).map((a) => a.replace(/^\.\//, ''));
const unknown = args.filter((a) => !MUTATION_MAP[a]);
if (unknown.length) {
  console.error(`no test mapping for ${unknown.join(', ')}; known modules:\n  ${MUTATION_ORDER.join('\n  ')}`);
  process.exit(2);
}
const modules = args.length ? args : MUTATION_ORDER;

/** Mutation score (killed + timeout) / (all valid mutants), as in Stryker's report. */
function score(jsonFile) {
  const report = JSON.parse(readFileSync(jsonFile, 'utf8'));
  let detected = 0;
  let valid = 0;
  const survivors = [];
  for (const file of Object.values(report.files)) {
    for (const m of file.mutants) {
      if (m.status === 'CompileError' || m.status === 'RuntimeError' || m.status === 'Ignored') continue;
      valid++;
      if (m.status === 'Killed' || m.status === 'Timeout') detected++;
      else survivors.push(`${m.location.start.line}:${m.location.start.column} ${m.mutatorName} ${m.status}`);
    }
  }
  return { score: valid ? (100 * detected) / valid : 100, detected, valid, survivors };
}

const results = [];
let failed = false;
for (const m of modules) {
  console.log(`\n=== mutating ${m} (tests: ${MUTATION_MAP[m].join(', ')})`);
  const run = spawnSync('nice', ['-n', '15', 'npx', 'stryker', 'run', 'stryker.config.mjs'], {
    stdio: 'inherit',
    env: { ...process.env, MUTATE_MODULE: m },
  });
  const slug = m.replace(/^src\//, '').replace(/\.ts$/, '').replaceAll('/', '-');
  const json = `reports/mutation/${slug}.json`;
  if (run.status !== 0 || !existsSync(json)) {
    failed = true;
    results.push(`${m}: run failed (exit ${run.status})`);
    continue;
  }
  const s = score(json);
  results.push(`${m}: ${s.score.toFixed(2)}% (${s.detected}/${s.valid})`);
}
console.log(`\nmutation scores\n  ${results.join('\n  ')}`);
process.exit(failed ? 1 : 0);
