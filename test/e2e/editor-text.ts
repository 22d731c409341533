import type { Page } from 'playwright-core';

/** What the editor's text should look like (every given condition must hold). */
export interface Want {
  includes?: string;
  excludes?: string;
  startsWith?: string;
  endsWith?: string;
  minLength?: number;
  equals?: string;
}

/**
 * The text of the CodeMirror document behind #editor, read through the view CodeMirror attaches
 * to its content element. Predicates are functions, not strings: the pages' Content-Security-Policy
 * forbids evaluating strings as code.
 */
export const textOf = (p: Page) =>
  p.evaluate(() => {
    const c = document.querySelector('#editor .cm-content') as (Element & { cmTile?: { root: { view: { state: { doc: { toString(): string } } } } } }) | null;
    return c?.cmTile ? c.cmTile.root.view.state.doc.toString() : '';
  });

export const waitText = (p: Page, want: Want, timeout = 10_000) =>
  p.waitForFunction(
    (w: Want) => {
      const c = document.querySelector('#editor .cm-content') as (Element & { cmTile?: { root: { view: { state: { doc: { toString(): string } } } } } }) | null;
      const t = c?.cmTile ? c.cmTile.root.view.state.doc.toString() : '';
      return (
        (w.includes === undefined || t.includes(w.includes)) &&
        (w.excludes === undefined || !t.includes(w.excludes)) &&
        (w.startsWith === undefined || t.startsWith(w.startsWith)) &&
        (w.endsWith === undefined || t.endsWith(w.endsWith)) &&
        (w.minLength === undefined || t.length >= w.minLength) &&
        (w.equals === undefined || t === w.equals)
      );
    },
    want,
    { timeout },
  );

/** Signs in on the page through the shared sign-in form (web/common/auth.ts) as an account made by test/support/auth.ts signIn. */
export async function signInOnPage(p: Page, user: string): Promise<void> {
  await p.waitForSelector('#signin-form');
  await p.fill('#signin-user', user);
  await p.fill('#signin-password', `pw-${user}-secret`);
  await p.click('#signin-form button[type="submit"]');
  await p.waitForSelector('#signed-in-as');
}
