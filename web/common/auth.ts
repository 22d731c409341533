/**
 * Browser side of the identity model: a bearer token kept in this browser (never a cookie, so a
 * cross-site request carries no credential), the API client that sends it (session.api, api.ts),
 * and a small sign-in form.
 */
import { createClient, problemText, type Client } from './api.js';
import { el } from './live.js';

export interface Me {
  id: string;
  name: string;
  roles: string[];
  kind: 'account' | 'device';
  gate?: string;
}

export class Session {
  private listeners = new Set<(me: Me | undefined) => void>();
  me: Me | undefined;
  /** The API with this session's token; a 401 forgets the token and tells the listeners (the page shows the sign-in form). */
  readonly api: Client = this.client();

  /**
   * A client that sends this session's token or, while nobody is signed in, the one `otherwise`
   * gives (a share link's token, docs/collab.md "Share links"). A 401 forgets the session's token
   * only when it was the one sent; a refused `otherwise` token is the caller's to tell.
   */
  client(otherwise: () => string | undefined = () => undefined): Client {
    return createClient({
      token: () => this.token ?? otherwise(),
      onUnauthorized: (sent) => {
        if (sent !== this.token) return;
        this.token = undefined;
        this.me = undefined;
        this.emit();
      },
    });
  }

  /** `storage`: sessionStorage (default: gone with the tab) or localStorage (a scanner device keeps it). */
  constructor(
    private readonly key: string,
    private readonly storage: Storage = sessionStorage,
  ) {}

  get token(): string | undefined {
    return this.storage.getItem(this.key) ?? undefined;
  }

  set token(value: string | undefined) {
    if (value) this.storage.setItem(this.key, value);
    else this.storage.removeItem(this.key);
  }

  onChange(fn: (me: Me | undefined) => void): void {
    this.listeners.add(fn);
  }

  private emit(): void {
    for (const fn of this.listeners) fn(this.me);
  }

  /** Headers with the token (for what is not a call of the API: a WebSocket's first frame, a service worker). */
  headers(json = false): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json' };
    if (json) h['content-type'] = 'application/json';
    const t = this.token;
    if (t) h.authorization = `Bearer ${t}`;
    return h;
  }

  /** Who the stored token belongs to (undefined: none or no longer valid). */
  async restore(): Promise<Me | undefined> {
    if (!this.token) {
      this.me = undefined;
    } else {
      this.me = await this.api
        .get('/api/auth/me')
        .then((r) => r.identity as Me | undefined)
        .catch(() => undefined);
    }
    this.emit();
    return this.me;
  }

  async signIn(user: string, password: string): Promise<Me> {
    this.token = undefined;
    const { token } = await this.api.post('/api/auth/login', { body: { user, password } });
    this.token = token;
    const me = await this.restore();
    if (!me) throw new Error('sign-in failed');
    return me;
  }

  /** Keeps a token issued elsewhere (e.g. a scanner device token). */
  async adopt(token: string): Promise<Me | undefined> {
    this.token = token;
    return this.restore();
  }

  async signOut(): Promise<void> {
    if (this.token) await this.api.post('/api/auth/logout').catch(() => undefined);
    this.token = undefined;
    this.me = undefined;
    this.emit();
  }
}

/**
 * A sign-in bar: the form (user, password) while signed out, "name · sign out" while signed in.
 * `need` names the role the page needs, shown to the user.
 */
export function mountSignIn(container: HTMLElement, session: Session, need: string): void {
  const render = (me: Me | undefined) => {
    container.replaceChildren();
    container.classList.add('signin');
    if (me) {
      const out = el('button', { type: 'button', class: 'link', id: 'sign-out' }, '로그아웃 · sign out');
      out.addEventListener('click', () => void session.signOut());
      container.append(el('span', { class: 'muted small', id: 'signed-in-as' }, `${me.name} (${me.roles.join(', ')})`), out);
      return;
    }
    const user = el('input', { id: 'signin-user', name: 'user', autocomplete: 'username', required: '', 'aria-label': '아이디 user', placeholder: '아이디 user' });
    const pass = el('input', { id: 'signin-password', name: 'password', type: 'password', autocomplete: 'current-password', required: '', 'aria-label': '비밀번호 password', placeholder: '비밀번호 password' });
    const msg = el('span', { class: 'error small', role: 'alert', id: 'signin-error' });
    const form = el('form', { id: 'signin-form', 'aria-label': `로그인 · sign in (${need})` }, user, pass, el('button', { type: 'submit' }, '로그인 · sign in'), msg);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      msg.textContent = '';
      session.signIn(user.value.trim(), pass.value).catch((err: unknown) => {
        msg.textContent = problemText(err);
      });
    });
    container.append(form);
  };
  session.onChange(render);
  render(session.me);
}
