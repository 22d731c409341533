// One bundler step: every web/<page>/ with an index.html becomes dist/web/<page>.html plus
// dist/web/assets/<page>.js (bundled from main.ts) and <page>.css when the page has styles.
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants as zlibConstants, deflateSync, gzipSync } from 'node:zlib';

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

// ---- shared assets every page gets (pages added later included) ----------------------------------
// base.css and font.css carry the self-hosted Korean font: @fontsource/noto-sans-kr's unicode-range
// slices (the browser fetches only the slices a page's text needs), woff2 only, weights 400 and 700.
const woff2Only = {
  name: 'woff2-only',
  setup(b) {
    b.onLoad({ filter: /@fontsource[\\/].*\.css$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replace(/,\s*url\([^)]*\.woff\) format\('woff'\)/g, ''),
      loader: 'css',
    }));
  },
};
// web/common/emoji/ (scripts/emoji-font.mjs): the emoji the pages show, from Noto Color Emoji
const emojiCss = join(src, 'common', 'emoji', 'emoji.css');
writeFileSync(
  join(out, 'font-entry.css'),
  `@import "@fontsource/noto-sans-kr/400.css";\n@import "@fontsource/noto-sans-kr/700.css";\n${existsSync(emojiCss) ? '@import "../../web/common/emoji/emoji.css";\n' : ''}html { font-family: "Noto Sans KR", "Maru Emoji", system-ui, sans-serif; }\n`,
);
await build({
  entryPoints: {
    ...(existsSync(join(src, 'common', 'base.css')) ? { base: join(src, 'common', 'base.css') } : {}),
    font: join(out, 'font-entry.css'),
  },
  outdir: join(out, 'assets'),
  bundle: true,
  minify: true,
  loader: { '.woff2': 'file', '.woff': 'file' },
  assetNames: 'fonts/[name]-[hash]',
  plugins: [woff2Only],
  logLevel: 'warning',
});
rmSync(join(out, 'font-entry.css'));

// service workers: web/<page>/sw.ts becomes /<page>-sw.js (at the root, so its scope may be /<page>/)
const workers = pages.filter((p) => existsSync(join(src, p, 'sw.ts')));
if (workers.length) {
  await build({
    entryPoints: Object.fromEntries(workers.map((p) => [`${p}-sw`, join(src, p, 'sw.ts')])),
    outdir: out,
    bundle: true,
    format: 'iife',
    target: ['es2022'],
    minify: true,
    logLevel: 'warning',
  });
}

// favicon: the SVG, and a 32 px PNG inside an ICO for browsers that ask for /favicon.ico
if (existsSync(join(src, 'common', 'favicon.svg'))) copyFileSync(join(src, 'common', 'favicon.svg'), join(out, 'favicon.svg'));
writeFileSync(join(out, 'favicon.ico'), faviconIco());

for (const page of pages) {
  writeFileSync(join(out, `${page}.html`), withSharedHead(readFileSync(join(src, page, 'index.html'), 'utf8')));
  if (existsSync(join(src, page, 'style.css'))) copyFileSync(join(src, page, 'style.css'), join(out, 'assets', `${page}.css`));
}

// precompressed copies (brotli and gzip) beside every text asset; the hub serves them by Accept-Encoding
let raw = 0;
let brotli = 0;
for (const file of walk(out)) {
  if (!/\.(html|js|css|svg|json|ico|txt|webmanifest)$/.test(file)) continue;
  const body = readFileSync(file);
  if (body.length < 512) continue;
  const br = brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  writeFileSync(`${file}.br`, br);
  writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
  raw += body.length;
  brotli += br.length;
}
console.log(`web: built ${pages.length} page(s): ${pages.join(', ')}; text assets ${Math.round(raw / 1024)} KiB, ${Math.round(brotli / 1024)} KiB brotli`);

/** Every page links the favicon and the font (through base.css, or font.css when it has no base.css). */
function withSharedHead(html) {
  const add = [];
  if (!/rel=["']?icon/.test(html)) add.push('<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
  if (!html.includes('/assets/base.css') && !html.includes('/assets/font.css')) add.push('<link rel="stylesheet" href="/assets/font.css">');
  return add.length ? html.replace(/<\/head>/i, `  ${add.join('\n  ')}\n</head>`) : html;
}

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

/** A 32×32 PNG (the accent colour, rounded corners) wrapped in an ICO container. */
function faviconIco() {
  const size = 32;
  const rows = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4);
    for (let x = 0; x < size; x++) {
      const dx = Math.max(0, Math.abs(x - 15.5) - 9.5);
      const dy = Math.max(0, Math.abs(y - 15.5) - 9.5);
      const inside = dx * dx + dy * dy <= 36;
      const mark = inside && y >= 9 && y <= 22 && (x === 9 || x === 10 || x === 21 || x === 22 || (Math.abs(x - 15.5) === y - 9 - 0.5) || (Math.abs(x - 15.5) === y - 9 + 0.5));
      row.set(inside ? (mark ? [255, 255, 255, 255] : [47, 111, 237, 255]) : [0, 0, 0, 0], 1 + x * 4);
    }
    rows.push(row);
  }
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const png = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
  const head = Buffer.alloc(22);
  head.writeUInt16LE(0, 0);
  head.writeUInt16LE(1, 2);
  head.writeUInt16LE(1, 4);
  head.set([size, size, 0, 0], 6);
  head.writeUInt16LE(1, 10);
  head.writeUInt16LE(32, 12);
  head.writeUInt32LE(png.length, 14);
  head.writeUInt32LE(22, 18);
  return Buffer.concat([head, png]);
}
