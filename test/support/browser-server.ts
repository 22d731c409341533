import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared Chromium's playwright endpoint; '' when there is none (browser.ts then starts one). */
    chromiumEndpoint: string;
  }
}

/**
 * Vitest global setup: one Chromium for the whole run, which the browser test files connect to
 * (launchChromium in browser.ts) instead of starting one each. Started only when the Chromium
 * exists (browser.ts reports a missing one).
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!existsSync(CHROMIUM)) {
    project.provide('chromiumEndpoint', '');
    return undefined;
  }
  const server = await chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  project.provide('chromiumEndpoint', server.wsEndpoint());
  return async () => {
    await server.close();
  };
}
