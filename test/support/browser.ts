import { existsSync } from 'node:fs';
import { chromium, type Browser, type Download } from 'playwright-core';
import { inject } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.js';

export { CHROMIUM, CHROMIUM_ARGS };

/**
 * Debian's Chromium driven by playwright-core. Missing Chromium: a loud skip, or a failure when
 * REQUIRE_BROWSER=1 (CI).
 */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but ${CHROMIUM} is missing`);
  console.warn(`\n*** ${CHROMIUM} not found: browser tests SKIPPED (apt-get install chromium) ***\n`);
  return false;
}

/**
 * A connection to the one Chromium of the run (started by the global setup, browser-server.ts):
 * every test file gets its own connection, and the contexts and pages it opens are its own (closed
 * with the connection by `close()`), without a browser start of its own. Without the shared one
 * (a run without the global setup) a Chromium of the file's own is started.
 */
export async function launchChromium(): Promise<Browser> {
  const endpoint = inject('chromiumEndpoint');
  if (endpoint) return chromium.connect(endpoint);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/**
 * The text of a finished download, read through the browser's connection (download.path() has no
 * local file when the browser is the shared one, connected remotely).
 */
export async function downloadedText(download: Download): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of await download.createReadStream()) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
