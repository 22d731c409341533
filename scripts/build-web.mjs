// One bundler step: every web/<page>/ with an index.html becomes dist/web/<page>.html plus
// dist/web/assets/<page>.js (bundled from main.ts) and <page>.css when the page has styles.
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const src = 'web';
const out = 'dist/web';
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const pages = readdirSync(src, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(src, d.name, 'index.html')))
  .map((d) => d.name);

await build({
  entryPoints: Object.fromEntries(pages.filter((p) => existsSync(join(src, p, 'main.ts'))).map((p) => [p, join(src, p, 'main.ts')])),
  outdir: join(out, 'assets'),
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  sourcemap: true,
  logLevel: 'warning',
});

for (const page of pages) {
  writeFileSync(join(out, `${page}.html`), readFileSync(join(src, page, 'index.html')));
  if (existsSync(join(src, page, 'style.css'))) copyFileSync(join(src, page, 'style.css'), join(out, 'assets', `${page}.css`));
}
if (existsSync(join(src, 'common', 'base.css'))) copyFileSync(join(src, 'common', 'base.css'), join(out, 'assets', 'base.css'));
console.log(`web: built ${pages.length} page(s): ${pages.join(', ')}`);
