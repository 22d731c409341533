import { describe, expect, it } from 'vitest';
import { Router } from '../../src/hub/router.js';

describe('router', () => {
  const r = new Router<string>();
  r.add('GET', '/', 'root');
  r.add('GET', '/member', 'member');
  r.add('POST', '/member', 'member-create');
  r.add('GET', '/api/md/lock/:slug', 'lock');
  r.add('GET', '/api/md/lock/stats', 'lock-static');
  r.add('GET', '/files/*', 'files');

  it('matches static paths and methods', () => {
    expect(r.match('GET', '/')).toMatchObject({ kind: 'found', value: 'root' });
    expect(r.match('GET', '/member')).toMatchObject({ kind: 'found', value: 'member', pattern: '/member' });
    expect(r.match('POST', '/member')).toMatchObject({ kind: 'found', value: 'member-create' });
    expect(r.match('GET', '/member/')).toMatchObject({ kind: 'found', value: 'member' });
  });

  it('decodes parameters and prefers static segments', () => {
    expect(r.match('GET', '/api/md/lock/%ED%98%91%EC%97%85')).toMatchObject({
      kind: 'found',
      value: 'lock',
      params: { slug: '협업' },
    });
    expect(r.match('GET', '/api/md/lock/stats')).toMatchObject({ value: 'lock-static' });
  });

  it('answers HEAD with the GET route', () => {
    expect(r.match('HEAD', '/member')).toMatchObject({ kind: 'found', value: 'member' });
  });

  it('reports allowed methods for a known path', () => {
    expect(r.match('DELETE', '/member')).toEqual({ kind: 'method', allowed: ['GET', 'HEAD', 'POST'] });
  });

  it('matches the wildcard with the rest of the path', () => {
    expect(r.match('GET', '/files/a/b.js')).toMatchObject({ value: 'files', params: { '*': 'a/b.js' } });
  });

  it('finds nothing for unknown paths and empty parameters', () => {
    expect(r.match('GET', '/nope')).toEqual({ kind: 'none' });
    expect(r.match('GET', '/api/md/lock/')).toEqual({ kind: 'none' });
  });

  it('throws on bad percent-encoding in a parameter', () => {
    expect(() => r.match('GET', '/api/md/lock/%E0%A4%A')).toThrow(URIError);
  });

  it('refuses duplicate routes and conflicting parameter names', () => {
    const x = new Router<number>();
    x.add('GET', '/a/:id', 1);
    expect(() => x.add('GET', '/a/:id', 2)).toThrow(/duplicate/);
    expect(() => x.add('POST', '/a/:name', 3)).toThrow(/conflicting/);
  });
});
