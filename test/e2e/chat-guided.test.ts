import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();
const SIZES = [
  { width: 1280, height: 900 },
  { width: 360, height: 780 },
] as const;

/**
 * The guided conversation on /chat as a customer meets it (issue: greeting, summary and
 * confirmation, referral code, product name), at a desktop and a phone width. The tests only use the
 * page; they read state back from the API.
 */
describe.skipIf(!hasBrowser)('/chat: greeting, summary before registration, referral code, product name', () => {
  let hub: HubProcess;
  let browser: Browser;
  const errors: string[] = [];

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('chat-guided'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const open = async (size: (typeof SIZES)[number], path: string) => {
    const page = await browser.newPage({ viewport: size });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${hub.url}${path}`);
    await page.waitForFunction(() => document.getElementById('stage')?.dataset.stage === 'greet');
    return page;
  };
  const bots = (page: Page) => page.$$eval('#log li.bot', (els) => els.length);
  const lastBot = (page: Page) => page.$$eval('#log li.bot', (els) => els.at(-1)?.textContent ?? '');
  const stage = (page: Page) => page.getAttribute('#stage', 'data-stage');
  /** The card the last turn showed (the log's last entry), if it showed one. */
  const lastCard = (page: Page) => page.$eval('#log li:last-child', (li) => (li as HTMLElement).dataset.card ?? null);
  /** Presses an offered button and waits for the bot's answer. */
  const press = async (page: Page, label: string) => {
    const before = await bots(page);
    await page.getByRole('button', { name: label, exact: true }).click();
    await page.waitForFunction((n) => document.querySelectorAll('#log li.bot').length > n, before);
  };
  /** Types an answer and waits for the bot's answer. */
  const say = async (page: Page, text: string) => {
    const before = await bots(page);
    await page.fill('#message', text);
    await page.press('#message', 'Enter');
    await page.waitForFunction((n) => document.querySelectorAll('#log li.bot').length > n, before);
  };
  /** The newest summary card, line by line. */
  const summary = (page: Page) =>
    page.$$eval('#log li.card[data-card="summary"]', (cards) =>
      Object.fromEntries([...(cards.at(-1)?.querySelectorAll('dd') ?? [])].map((dd) => [(dd as HTMLElement).dataset.field, dd.textContent])),
    );
  const fits = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  const receipts = async () => (await call(hub.url, 'GET', '/api/shareholder')).body.cumulativeReceipts as number;
  /** The rental as the rental catalogue names it: product code and name. */
  const rentalName = async () => {
    const products = (await call(hub.url, 'GET', '/api/rental/products')).body.products as { type: string; code: string; name: string }[];
    const ipa = products.find((p) => p.type === 'rental-ipa')!;
    return `${ipa.code} ${ipa.name}`;
  };
  /** The intake record behind the receipt card's link (its access key rides in the fragment). */
  const record = async (page: Page) => {
    const href = (await page.getAttribute('#log li.card[data-card="receipt"] a.track', 'href'))!;
    const f = new URLSearchParams(new URL(href, hub.url).hash.slice(1));
    return (await call(hub.url, 'GET', `/api/subscriptions/${f.get('receipt')}?key=${f.get('key')}`)).body;
  };

  for (const size of SIZES) {
    const wide = size.width > 400;

    it(`at ${size.width} px: the greeting is plain Korean, with no placeholder-like quoted word`, async () => {
      const page = await open(size, '/chat');
      const bot = await lastBot(page);
      expect(bot).toContain('안녕하세요, maru 맞춤 상담이에요.');
      expect(bot).toContain('찾아 주셔서 감사합니다.');
      expect(bot).toContain('저희를 어떻게 알게 되셨나요?');
      expect(bot).not.toContain('"상담"');
      expect(bot).not.toContain('"');
      expect(await fits(page)).toBe(true);
      // a subject given in the address is named, quoted, once
      const topic = await open(size, `/chat?subject=${encodeURIComponent('학교 화재감지기')}`);
      expect(await lastBot(topic)).toContain('"학교 화재감지기" 건으로 찾아 주셔서 감사합니다.');
      expect(errors).toEqual([]);
      await page.close();
      await topic.close();
    });

    it(`at ${size.width} px: nothing is registered before the summary is confirmed; "네" at the remarks is no remark; a line can be changed`, async () => {
      const name = wide ? '배수지' : '남궁민';
      const [phone, newPhone] = wide ? ['010-1010-2020', '010-3030-4040'] : ['010-5050-6060', '010-7070-8080'];
      const product = await rentalName();
      const before = await receipts();
      const page = await open(size, '/chat');
      await press(page, '검색');
      await press(page, '렌탈');
      await press(page, '신청할게요');
      await say(page, name);
      await say(page, phone);
      await press(page, '건너뛰기');
      expect(await lastBot(page)).toContain('요청 사항');
      // a yes at the remarks question: no remark, and the summary asks to confirm
      await say(page, '네');
      expect([await stage(page), await lastCard(page)]).toEqual(['collect', 'summary']);
      expect(await summary(page)).toEqual({ name, contact: phone, email: '없음', product, need: '렌탈', memo: '없음' });
      expect(await page.$$eval('#choices button', (bs) => bs.map((b) => b.textContent))).toEqual(['확인', '수정', '상담원 연결']);
      expect(await page.isHidden('#receipt')).toBe(true);
      expect(await receipts()).toBe(before);
      expect(await fits(page)).toBe(true);

      // change the phone number, then add a remark that merely contains a yes word
      await press(page, '수정');
      await press(page, '연락처');
      expect(await stage(page)).toBe('collect');
      await say(page, newPhone);
      expect([await stage(page), await lastCard(page)]).toEqual(['collect', 'summary']);
      expect((await summary(page)).contact).toBe(newPhone);
      await say(page, '요청 사항 수정할게요');
      expect(await stage(page)).toBe('collect');
      await say(page, '설치 진행 전에 전화 주세요');
      expect(await summary(page)).toEqual({ name, contact: newPhone, email: '없음', product, need: '렌탈', memo: '설치 진행 전에 전화 주세요' });
      expect(await receipts()).toBe(before);

      // "예" confirms: now the application is registered, once, as the summary showed it
      await say(page, '예');
      expect(await stage(page)).toBe('received');
      await page.waitForSelector('#receipt:not([hidden])');
      expect(await receipts()).toBe(before + 1);
      const r = await record(page);
      expect(r).toMatchObject({ type: 'rental-ipa', contactName: name, contactPhone: newPhone });
      expect(r.remarks).toContain(`신청 상품: ${product}`);
      expect(r.remarks).toContain('요청 사항: 설치 진행 전에 전화 주세요');
      expect(r.remarks).not.toMatch(/요청 사항: (네|예)$/m);
      expect(await fits(page)).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    });

    it(`at ${size.width} px: a referral code in the address is acknowledged (not who referred) and shown in the summary; an unknown one is said`, async () => {
      // the referrer: a registration through the page, then a code to share
      const [owner, ownerPhone] = wide ? ['김하람', '010-4141-5252'] : ['최보라', '010-6363-7474'];
      const first = await open(size, '/chat');
      for (const c of ['검색', '하드웨어', '신청할게요']) await press(first, c);
      await say(first, owner);
      await say(first, ownerPhone);
      for (const c of ['건너뛰기', '없음', '확인', '진행 상황 보기', '다음', '괜찮아요', '추천 코드 받기']) await press(first, c);
      expect(await stage(first)).toBe('sharing');
      const code = (await first.textContent('#log li.card[data-card="share"]'))!.match(/MARU-[0-9A-Z]+/)![0];
      await first.close();

      // the friend arrives with the link (case does not matter)
      const page = await open(size, `/chat?ref=${code.toLowerCase()}`);
      const greeting = await lastBot(page);
      expect(greeting).toContain(`추천 코드를 확인했어요 (${code})`);
      expect(greeting).toContain('혜택');
      for (const who of [owner, `${owner[0]}*${owner[2]}`, ownerPhone, ownerPhone.slice(-4)]) expect(greeting).not.toContain(who);
      for (const c of ['추천', '버틀러 서비스', '신청할게요']) await press(page, c);
      await say(page, wide ? '이소담' : '한가람');
      await say(page, wide ? '010-8585-9696' : '010-2727-3838');
      await press(page, '건너뛰기');
      await press(page, '없음');
      expect([await stage(page), await lastCard(page)]).toEqual(['collect', 'summary']);
      expect((await summary(page)).referral).toBe(code);
      expect(await page.textContent('#log li.card[data-card="summary"]')).not.toContain(owner);
      await press(page, '확인');
      expect(await stage(page)).toBe('received');
      const info = (await call(hub.url, 'GET', `/api/referral/${code}`)).body;
      expect(info.uses).toBe(1);
      expect(await fits(page)).toBe(true);
      await page.close();

      // a code nobody holds, or no code at all: said, and the conversation starts without it
      for (const bad of ['MARU-ZZZZZZ', '<b>x</b>']) {
        const p = await open(size, `/chat?ref=${encodeURIComponent(bad)}`);
        expect(await p.textContent('#log li.note')).toContain(`추천 코드(${bad})를 확인하지 못해 코드 없이 상담을 시작할게요.`);
        expect(await lastBot(p)).not.toContain('추천 코드를 확인했어요');
        expect(await p.$$('#log b')).toHaveLength(0);
        await p.close();
      }
      expect(errors).toEqual([]);
    });

    it(`at ${size.width} px: the product has one name throughout the conversation, the rental catalogue's`, async () => {
      const product = await rentalName();
      const page = await open(size, '/chat');
      await press(page, 'SNS');
      await press(page, '렌탈');
      expect(await page.textContent('#log li.card[data-card="product"] .card-title')).toBe(product);
      expect(await page.textContent('#log li.card[data-card="product"]')).not.toMatch(/코드|31/);
      expect(await lastBot(page)).toContain(product);
      await press(page, '신청할게요');
      await say(page, wide ? '서예린' : '임하준');
      await say(page, wide ? '010-1313-2424' : '010-3535-4646');
      await press(page, '건너뛰기');
      await press(page, '없음');
      expect((await summary(page)).product).toBe(product);
      for (const c of ['확인', '진행 상황 보기', '다음']) await press(page, c);
      expect(await stage(page)).toBe('upsell');
      expect(await page.textContent('#log li.card[data-card="upsell"]')).toContain(`${product}에 추가`);
      expect(await lastBot(page)).toContain(product);
      // no internal rule number anywhere in the conversation
      const log = (await page.textContent('#log'))!;
      expect(log).not.toMatch(/코드\s*\d|\(\s*31\s*\)/);
      expect(await fits(page)).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    });
  }
});
