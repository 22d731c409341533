// Makes the pages' emoji font: the few emoji the pages show (the bingo themes of src/ticket/bingo.ts
// and the coach's reward), cut out of Noto Color Emoji (COLRv1, SIL Open Font License 1.1, from the npm
// package @infolektuell/noto-color-emoji) into web/common/emoji/, one small woff2 per slice of the
// package with the @font-face rules in emoji.css ("Maru Emoji", each with its unicode-range), so a
// machine without an emoji font shows the emoji rather than empty boxes. Needs fontTools (Debian:
// python3-fonttools python3-brotli) and a built tree (npm run build) for the themes. Run again when a
// theme gains an emoji:
//
//   npm pack @infolektuell/noto-color-emoji@0.2.0 && tar xzf infolektuell-noto-color-emoji-0.2.0.tgz
//   PYTHON=/usr/bin/python3 node scripts/emoji-font.mjs package
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const pkg = process.argv[2];
if (!pkg) throw new Error('usage: node scripts/emoji-font.mjs <unpacked @infolektuell/noto-color-emoji>');
const { THEMES } = await import('../dist/src/ticket/bingo.js');
/** Emoji the pages write themselves (web/coach: the reward). */
const EXTRA = ['🎉'];

const wanted = new Set();
for (const th of THEMES) if (th.kind === 'emoji') for (const item of th.items) for (const ch of item) wanted.add(ch.codePointAt(0));
for (const item of EXTRA) for (const ch of item) wanted.add(ch.codePointAt(0));
// presentation selector and joiner: kept wherever a slice has them
const JOINERS = [0xfe0f, 0x200d];

// the package's slices: src file and unicode-range of each @font-face
const css = readFileSync(join(pkg, 'index.css'), 'utf8');
const faces = [...css.matchAll(/src:\s*url\(\.\/files\/([\w.-]+\.woff2)\)[^;]*;\s*unicode-range:\s*([^;]+);/g)].map(([, file, ranges]) => ({
  file,
  has: (cp) =>
    ranges.split(',').some((r) => {
      const [a, b] = r.trim().replace(/^U\+/i, '').split('-').map((h) => parseInt(h, 16));
      return cp >= a && cp <= (b ?? a);
    }),
}));

const out = join('web', 'common', 'emoji');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const hex = (cp) => cp.toString(16);
const rules = [];
const missing = new Set(wanted);
for (const [i, face] of faces.entries()) {
  const mine = [...wanted].filter((cp) => face.has(cp));
  if (!mine.length) continue;
  for (const cp of mine) missing.delete(cp);
  const name = `emoji-${i}.woff2`;
  const unicodes = [...mine, ...JOINERS.filter((cp) => face.has(cp))].map(hex).join(',');
  execFileSync(process.env.PYTHON ?? 'python3', ['-m', 'fontTools.subset', join(pkg, 'files', face.file), `--unicodes=${unicodes}`, '--flavor=woff2', '--layout-features=*', '--no-hinting', `--output-file=${join(out, name)}`], { stdio: 'inherit' });
  rules.push(`@font-face {\n  font-family: "Maru Emoji";\n  font-style: normal;\n  font-weight: 400;\n  font-display: swap;\n  src: url(./${name}) format("woff2");\n  unicode-range: ${mine.sort((a, b) => a - b).map((cp) => `U+${hex(cp)}`).join(', ')};\n}\n`);
}
if (missing.size) throw new Error(`no slice of the font has ${[...missing].map((cp) => String.fromCodePoint(cp)).join(' ')}`);
writeFileSync(
  join(out, 'emoji.css'),
  `/* Made by scripts/emoji-font.mjs: the emoji the pages show, cut out of Noto Color Emoji (COLRv1;\n   Copyright 2021 Google Inc., SIL Open Font License 1.1, see OFL.txt beside this file). */\n${rules.join('\n')}`,
);
copyFileSync(join(pkg, 'LICENSE'), join(out, 'OFL.txt'));
console.log(`${wanted.size} emoji in ${rules.length} files under ${out}`);
