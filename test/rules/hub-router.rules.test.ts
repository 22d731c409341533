import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Router } from '../../src/hub/router.js';

// The hub's one router: static segments win over parameters, parameters over the trailing
// wildcard; HEAD falls back to GET; a path known under other methods answers with its Allow list.

const segment = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes('/'));
const slug = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);

describe('router: registration', () => {
  it('refuses a pattern that does not start with /', () => {
    expect(() => new Router<number>().add('GET', 'a/b', 1)).toThrow('route pattern must start with /: a/b');
    expect(() => new Router<number>().add('GET', '', 1)).toThrow(/must start with \//);
  });
  it('refuses * anywhere but last', () => {
    const r = new Router<number>();
    expect(() => r.add('GET', '/a/*/b', 1)).toThrow('* must be last in /a/*/b');
    r.add('GET', '/a/*', 2);
    expect(r.match('GET', '/a/x/y')).toMatchObject({ kind: 'found', value: 2, params: { '*': 'x/y' } });
  });
  it('refuses a second route on the same method and pattern, wildcard ones too', () => {
    const r = new Router<number>();
    r.add('GET', '/f/*', 1);
    expect(() => r.add('GET', '/f/*', 2)).toThrow('duplicate route GET /f/*');
    r.add('POST', '/f/*', 3);
    r.add('GET', '/x', 4);
    expect(() => r.add('GET', '/x/', 5)).toThrow('duplicate route GET /x/');
  });
  it('names both parameters when they conflict; the same name is shared', () => {
    const r = new Router<number>();
    r.add('GET', '/u/:id', 1);
    r.add('PUT', '/u/:id/name', 2);
    expect(() => r.add('POST', '/u/:uid', 3)).toThrow('conflicting parameter names :id and :uid in /u/:uid');
    expect(r.match('PUT', '/u/7/name')).toEqual({ kind: 'found', value: 2, params: { id: '7' }, pattern: '/u/:id/name' });
  });
});

describe('router: matching', () => {
  it('the root and trailing slashes', () => {
    const r = new Router<string>();
    r.add('GET', '/', 'root');
    r.add('GET', '/a', 'a');
    expect(r.match('GET', '/')).toEqual({ kind: 'found', value: 'root', params: {}, pattern: '/' });
    expect(r.match('GET', '/a/')).toMatchObject({ value: 'a' });
    expect(r.match('GET', '/a//')).toEqual({ kind: 'none' });
    expect(r.match('GET', '/b')).toEqual({ kind: 'none' });
  });

  it('a parameter round-trips any percent-encoded segment', () => {
    const r = new Router<string>();
    r.add('GET', '/doc/:slug', 'doc');
    r.add('GET', '/doc/:slug/history', 'history');
    fc.assert(
      fc.property(segment, (s) => {
        const enc = encodeURIComponent(s);
        expect(r.match('GET', `/doc/${enc}`)).toEqual({ kind: 'found', value: 'doc', params: { slug: s }, pattern: '/doc/:slug' });
        expect(r.match('GET', `/doc/${enc}/history`)).toMatchObject({ value: 'history', params: { slug: s } });
      }),
    );
  });

  it('static beats parameter beats wildcard, whatever the order of registration', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(['static', 'param', 'wild'], { minLength: 3, maxLength: 3 }), slug, (order, other) => {
        const r = new Router<string>();
        for (const k of order) {
          if (k === 'static') r.add('GET', '/p/fixed', 'static');
          if (k === 'param') r.add('GET', '/p/:id', 'param');
          if (k === 'wild') r.add('GET', '/p/*', 'wild');
        }
        expect(r.match('GET', '/p/fixed')).toEqual({ kind: 'found', value: 'static', params: {}, pattern: '/p/fixed' });
        if (other !== 'fixed') expect(r.match('GET', `/p/${other}`)).toEqual({ kind: 'found', value: 'param', params: { id: other }, pattern: '/p/:id' });
        expect(r.match('GET', `/p/${other}/more`)).toEqual({ kind: 'found', value: 'wild', params: { '*': `${other}/more` }, pattern: '/p/*' });
      }),
    );
  });

  it('falls back from a static segment to a parameter when the static branch leads nowhere', () => {
    const r = new Router<string>();
    r.add('GET', '/a/new', 'new');
    r.add('GET', '/a/:id/edit', 'edit');
    expect(r.match('GET', '/a/new/edit')).toEqual({ kind: 'found', value: 'edit', params: { id: 'new' }, pattern: '/a/:id/edit' });
    expect(r.match('GET', '/a/new')).toMatchObject({ value: 'new', params: {} });
    expect(r.match('GET', '/a/x/other')).toEqual({ kind: 'none' });
  });

  it('a static dead end (no route, no wildcard) leaves no wildcard parameter behind', () => {
    const r = new Router<string>();
    r.add('GET', '/a/b/c', 'abc');
    r.add('GET', '/a/:x', 'ax');
    expect(r.match('GET', '/a/b')).toEqual({ kind: 'found', value: 'ax', params: { x: 'b' }, pattern: '/a/:x' });
  });

  it('a parameter never matches an empty segment, the wildcard may be empty', () => {
    const r = new Router<string>();
    r.add('GET', '/a/:id/b', 'b');
    r.add('GET', '/w/*', 'w');
    expect(r.match('GET', '/a//b')).toEqual({ kind: 'none' });
    expect(r.match('GET', '/w')).toEqual({ kind: 'found', value: 'w', params: { '*': '' }, pattern: '/w/*' });
    expect(r.match('GET', '/w/')).toEqual({ kind: 'found', value: 'w', params: { '*': '' }, pattern: '/w/*' });
    expect(r.match('GET', '/w/x/')).toMatchObject({ params: { '*': 'x' } });
  });

  it('a route on the node itself wins over the wildcard below it', () => {
    const r = new Router<string>();
    r.add('GET', '/s', 'self');
    r.add('GET', '/s/*', 'rest');
    expect(r.match('GET', '/s')).toEqual({ kind: 'found', value: 'self', params: {}, pattern: '/s' });
    expect(r.match('GET', '/s/1')).toMatchObject({ value: 'rest', params: { '*': '1' } });
  });

  it('a failed deeper walk leaves no parameters behind', () => {
    const r = new Router<string>();
    r.add('GET', '/a/:x/b', 'ab');
    r.add('GET', '/a/*', 'rest');
    expect(r.match('GET', '/a/1/c')).toEqual({ kind: 'found', value: 'rest', params: { '*': '1/c' }, pattern: '/a/*' });
  });

  it('HEAD uses GET; the Allow list is sorted and adds HEAD only next to GET', () => {
    const r = new Router<string>();
    r.add('POST', '/m', 'post');
    r.add('GET', '/m', 'get');
    r.add('DELETE', '/m', 'del');
    r.add('PUT', '/only-put', 'put');
    r.add('HEAD', '/h', 'head');
    r.add('GET', '/h', 'get-h');
    expect(r.match('HEAD', '/m')).toEqual({ kind: 'found', value: 'get', params: {}, pattern: '/m' });
    expect(r.match('PATCH', '/m')).toEqual({ kind: 'method', allowed: ['DELETE', 'GET', 'HEAD', 'POST'] });
    expect(r.match('GET', '/only-put')).toEqual({ kind: 'method', allowed: ['PUT'] });
    expect(r.match('HEAD', '/only-put')).toEqual({ kind: 'method', allowed: ['PUT'] });
    expect(r.match('HEAD', '/h')).toMatchObject({ value: 'head' });
    expect(r.match('POST', '/h')).toEqual({ kind: 'method', allowed: ['GET', 'HEAD'] });
    expect(r.match('POST', '/s')).toEqual({ kind: 'none' });
  });

  it('the Allow list of a wildcard path and of a parameter path', () => {
    const r = new Router<string>();
    r.add('GET', '/f/*', 'get');
    r.add('PUT', '/i/:id', 'put');
    expect(r.match('POST', '/f/a/b')).toEqual({ kind: 'method', allowed: ['GET', 'HEAD'] });
    expect(r.match('GET', '/i/3')).toEqual({ kind: 'method', allowed: ['PUT'] });
  });

  it('any registered static path is found again, with or without a trailing slash', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.array(slug, { minLength: 1, maxLength: 4 }).map((a) => `/${a.join('/')}`), { minLength: 1, maxLength: 8 }), (paths) => {
        const r = new Router<number>();
        paths.forEach((p, i) => r.add('GET', p, i));
        paths.forEach((p, i) => {
          expect(r.match('GET', p)).toEqual({ kind: 'found', value: i, params: {}, pattern: p });
          expect(r.match('GET', `${p}/`)).toMatchObject({ value: i });
          expect(r.match('DELETE', p)).toEqual({ kind: 'method', allowed: ['GET', 'HEAD'] });
        });
        if (!paths.includes('/zz9')) expect(r.match('GET', '/zz9/zz9/zz9/zz9/zz9')).toEqual({ kind: 'none' });
      }),
    );
  });
});

describe('router: patterns without parameters (looked up whole)', () => {
  it('a refused second route leaves the first one answering', () => {
    const r = new Router<number>();
    r.add('GET', '/only', 1);
    expect(() => r.add('GET', '/only', 2)).toThrow('duplicate route GET /only');
    expect(r.match('GET', '/only')).toEqual({ kind: 'found', value: 1, params: {}, pattern: '/only' });
    r.add('POST', '/only', 3);
    expect(r.match('POST', '/only')).toEqual({ kind: 'found', value: 3, params: {}, pattern: '/only' });
    expect(r.match('GET', '/only')).toMatchObject({ value: 1 });
  });
  it('a path that spells a pattern is matched as a path, not as that pattern', () => {
    const r = new Router<number>();
    r.add('GET', '/u/:id', 1);
    r.add('GET', '/f/*', 2);
    expect(r.match('GET', '/u/:id')).toEqual({ kind: 'found', value: 1, params: { id: ':id' }, pattern: '/u/:id' });
    expect(r.match('GET', '/f/*')).toEqual({ kind: 'found', value: 2, params: { '*': '*' }, pattern: '/f/*' });
  });
});

describe('router: route groups (a service mounted under its prefix)', () => {
  it('a prefix is /segment[/segment...], without a trailing / or *', async () => {
    const { checkPrefix } = await import('../../src/hub/router.js');
    for (const p of ['/api', '/api/token', '/a/b/c', '/x-y_z.1']) expect(checkPrefix(p)).toBe(p);
    for (const p of ['', '/', 'api', 'api/', '/api/', '//api', '/api//x', '/api/*', '/*', '/a?b', '/a#b', '/a*b', ' /api']) {
      expect(() => checkPrefix(p), JSON.stringify(p)).toThrow(`a route prefix is /segment[/segment...] without a trailing / or *: ${p}`);
    }
  });
  it('a path under a prefix starts with /; / is the prefix itself', async () => {
    const { mountPath } = await import('../../src/hub/router.js');
    expect(mountPath('/api/token', '/wallet')).toBe('/api/token/wallet');
    expect(mountPath('/api/token', '/')).toBe('/api/token');
    expect(mountPath('/api', '/:id/x')).toBe('/api/:id/x');
    expect(mountPath('/api', '//')).toBe('/api//');
    expect(() => mountPath('/api/token', 'wallet')).toThrow('a route path under /api/token must start with /: wallet');
    expect(() => mountPath('/api', '')).toThrow('a route path under /api must start with /: ');
    expect(() => mountPath('/api', 'x/')).toThrow(/must start with \//);
  });
});
