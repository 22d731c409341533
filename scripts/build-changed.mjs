// `npm start` / `npm run demo`: builds only what changed since the last build. The server (tsc) is
// rebuilt when a file under src/ or bench/, tsconfig.json or package-lock.json changed; the pages
// (scripts/build-web.mjs) when a file under web/, the page build script or package-lock.json
// changed. "Changed" compares each input's path, size and modification time with the fingerprint
// kept beside the output (dist/.build-<part>); a missing output always builds.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const parts = [
  { name: 'server', inputs: ['src', 'bench', 'tsconfig.json', 'package-lock.json'], output: 'dist/src/main.js', run: ['npx', ['tsc', '-p', 'tsconfig.json']] },
  { name: 'web', inputs: ['web', 'scripts/build-web.mjs', 'package-lock.json'], output: 'dist/web/assets', run: ['node', ['scripts/build-web.mjs']] },
];

function files(path) {
  if (!existsSync(path)) return [];
  const st = statSync(path);
  if (!st.isDirectory()) return [`${path}\t${st.size}\t${st.mtimeMs}`];
  return readdirSync(path).sort().flatMap((n) => files(join(path, n)));
}

for (const part of parts) {
  const fingerprint = createHash('sha256').update(part.inputs.flatMap(files).join('\n')).digest('hex');
  const stamp = `dist/.build-${part.name}`;
  const previous = existsSync(stamp) ? readFileSync(stamp, 'utf8') : '';
  const outputThere = existsSync(part.output);
  if (previous === fingerprint && outputThere) {
    console.log(`build: ${part.name} unchanged, not rebuilt`);
    continue;
  }
  const [cmd, args] = part.run;
  const r = spawnSync(cmd, args, { stdio: 'inherit', shell: process.platform === 'win32' });
  if (r.status !== 0) process.exit(r.status ?? 1);
  writeFileSync(stamp, fingerprint);
}
