import { el } from '../common/live.js';

/** A presence entry as the hub sends it (docs/collab.md "Live channel"). */
export interface Peer {
  id: string;
  /** The identity behind the entry (one person may have several tabs open). */
  user?: string;
  name: string;
  color: string;
}

/** One person in the presence list: every tab of theirs counts once. */
export interface Person {
  user: string;
  name: string;
  /** What the page shows: the name, with the user id beside it when someone else has the same name. */
  label: string;
  color: string;
  tabs: number;
}

/** A display name: the account's name, else the user id. */
export const displayName = (p: { name?: string; user?: string; id?: string }): string => p.name?.trim() || p.user || p.id || '?';

/**
 * The people behind the presence entries, in the order they joined: one per identity (two tabs of
 * one person are one person, counted), each named by their display name; two people who share a
 * name are told apart by their user ids.
 */
export function people(peers: readonly Peer[]): Person[] {
  const byUser = new Map<string, Person>();
  for (const p of peers) {
    const user = p.user ?? p.id;
    const known = byUser.get(user);
    if (known) known.tabs++;
    else byUser.set(user, { user, name: displayName(p), label: '', color: p.color, tabs: 1 });
  }
  const all = [...byUser.values()];
  for (const x of all) x.label = all.some((o) => o.user !== x.user && o.name === x.name) ? `${x.name} (${x.user})` : x.name;
  return all;
}

/** The presence chips: a colour dot and the full name per person; yours marked, several tabs counted. */
export function drawPeople(host: HTMLElement, peers: readonly Peer[], me: string | undefined): void {
  host.replaceChildren(
    ...people(peers).map((p) => {
      const mine = p.user === me;
      const tabs = p.tabs > 1 ? ` · 탭 ${p.tabs}개 · ${p.tabs} tabs` : '';
      const chip = el('span', { class: 'peer', 'data-user': p.user, title: `${p.label}${mine ? ' (나 · you)' : ''}${tabs}` });
      if (mine) chip.dataset.me = 'true';
      const dot = el('span', { class: 'avatar', 'aria-hidden': 'true' });
      dot.style.background = p.color;
      chip.append(dot, el('span', { class: 'peer-name' }, p.label));
      if (mine) chip.append(el('small', { class: 'peer-me' }, '나 · you'));
      if (p.tabs > 1) chip.append(el('small', { class: 'peer-tabs' }, `탭 ${p.tabs}개 · ${p.tabs} tabs`));
      return chip;
    }),
  );
}
