#!/usr/bin/env node
// npm run mutate                      -> every module of scripts/mutate-map.mjs, smallest first
// npm run mutate -- src/ticket/code.ts -> that module only (several may be named)
// npm run mutate -- --changed [REV]    -> the mapped modules that the work tree changed since REV
//                                        (default: the merge base with main), or whose mapped
//                                        tests changed; nothing to run is not an error
// Each module is one Stryker run (concurrency 1, under `nice`), with its own HTML and JSON report
// in reports/mutation/; a summary line per module is printed at the end. Not part of CI.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { MUTATION_MAP, MUTATION_ORDER } from './mutate-map.mjs';

let args = process.argv.slice(2).map((a) => a.replace(/^\.\//, ''));
if (args[0] === '--changed') {
  args = changedModules(args[1]);
  if (args.length === 0) {
    console.log('no mapped module or its tests changed: nothing to mutate');
    process.exit(0);
  }
}
const unknown = args.filter((a) => !MUTATION_MAP[a]);
if (unknown.length) {
  console.error(`no test mapping for ${unknown.join(', ')}; known modules:\n  ${MUTATION_ORDER.join('\n  ')}`);
  process.exit(2);
}
const modules = args.length ? args : MUTATION_ORDER;

/** Mapped modules whose source or mapped tests differ between `base` and the work tree (untracked files too). */
function changedModules(base) {
  const git = (...a) => {
    const r = spawnSync('git', a, { encoding: 'utf8' });
    if (r.status !== 0) {
      console.error(`git ${a.join(' ')}: ${r.stderr.trim()}`);
      process.exit(2);
    }
    return r.stdout.split('\n').filter(Boolean);
  };
  const rev = base ?? git('merge-base', 'HEAD', 'main')[0];
  const changed = new Set([...git('diff', '--name-only', rev), ...git('ls-files', '--others', '--exclude-standard')]);
  const picked = MUTATION_ORDER.filter((m) => changed.has(m) || MUTATION_MAP[m].some((t) => changed.has(t)));
  console.log(`changed since ${rev}: ${picked.length ? picked.join(', ') : 'no mapped module'}`);
  return picked;
}

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
