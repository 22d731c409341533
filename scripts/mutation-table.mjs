#!/usr/bin/env node
// node scripts/mutation-table.mjs -> the markdown table of docs/mutation.md ("Scores on the final
// build") from the JSON reports that `npm run mutate` left in reports/mutation/: one row per mapped
// module, in the map's order, with its score, its mutants by outcome and the day of its report.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { MUTATION_MAP } from './mutate-map.mjs';

const COUNTED_OUT = new Set(['CompileError', 'RuntimeError', 'Ignored']);
const rows = ['| Module | Score | Killed / time-outs / survived / not covered | Measured | Mapped tests |', '|---|---|---|---|---|'];
let missing = 0;
for (const [module, tests] of Object.entries(MUTATION_MAP)) {
  const slug = module.replace(/^src\//, '').replace(/\.ts$/, '').replaceAll('/', '-');
  const file = `reports/mutation/${slug}.json`;
  const list = tests.map((t) => t.replace(/^test\//, '')).join(', ');
  if (!existsSync(file)) {
    missing++;
    rows.push(`| ${module} | not measured | | | ${list} |`);
    continue;
  }
  const n = { Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0 };
  for (const f of Object.values(JSON.parse(readFileSync(file, 'utf8')).files)) {
    for (const m of f.mutants) if (!COUNTED_OUT.has(m.status)) n[m.status]++;
  }
  const valid = n.Killed + n.Timeout + n.Survived + n.NoCoverage;
  const detected = n.Killed + n.Timeout;
  const score = valid ? ((100 * detected) / valid).toFixed(2) : '100.00';
  const day = statSync(file).mtime.toISOString().slice(0, 10);
  rows.push(`| ${module} | ${score}% (${detected}/${valid}) | ${n.Killed} / ${n.Timeout} / ${n.Survived} / ${n.NoCoverage} | ${day} | ${list} |`);
}
console.log(rows.join('\n'));
if (missing) console.error(`${missing} mapped module(s) without a report: run npm run mutate -- <module>`);
