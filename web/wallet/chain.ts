// The page's own check of the chain (issue 23): the signed tree head's Ed25519 signature with the chain's
// public key, and the consistency proof from the last head this browser verified (kept in
// localStorage) to the new one; a receipt's inclusion proof against a head verified that way.
import { messageFor } from '../common/messages.js';
import { problemText, publicApi } from '../common/api.js';
import { relay } from './session.js';
import { hex, isHead, leafHash, sha256, unhex, verifyConsistency, verifyHeadSignature, verifyInclusion, type SignedTreeHead } from './merkle.js';

export const STORE = { head: 'wallet:chain:verified-head', key: 'wallet:chain:key' };

export interface HeadCheck {
  ok: boolean;
  /** What was checked, or why it failed, in Korean. */
  text: string;
  head?: SignedTreeHead;
}

let publicKey: Promise<string | null> | undefined;
/** The chain's public key as the hub publishes it; pinned on first use, a changed key is refused. */
async function chainKey(): Promise<{ key: string } | { error: string }> {
  publicKey ??= publicApi.get('/api/token/config').then((c) => c.chain_public_key, () => null);
  const key = await publicKey;
  if (!key) return { error: '체인 공개키가 설정되어 있지 않아 검증할 수 없습니다.' };
  const pinned = localStorage.getItem(STORE.key);
  if (pinned && pinned !== key) return { error: '체인 공개키가 이전에 사용한 키와 다릅니다. 검증을 거부합니다.' };
  if (!pinned) localStorage.setItem(STORE.key, key);
  return { key };
}

function storedHead(): SignedTreeHead | null | 'corrupt' {
  const raw = localStorage.getItem(STORE.head);
  if (!raw) return null;
  try {
    const h = JSON.parse(raw) as unknown;
    return isHead(h) ? h : 'corrupt';
  } catch {
    return 'corrupt';
  }
}

const short = (root: string) => `${root.slice(0, 12)}…`;

/** Checks a head (the hub's current one when none is given) and keeps it when it is newer. */
export async function checkHead(given?: SignedTreeHead): Promise<HeadCheck> {
  const k = await chainKey();
  if ('error' in k) return { ok: false, text: k.error };
  let head = given;
  if (!head) {
    try {
      head = (await publicApi.get('/api/token/chain/sth')).sth as SignedTreeHead;
    } catch (err) {
      return { ok: false, text: problemText(err) };
    }
  }
  if (!isHead(head)) return { ok: false, text: '트리 헤드의 형식이 올바르지 않습니다.' };
  if (!(await verifyHeadSignature(k.key, head))) return { ok: false, text: `서명 검증 실패: 크기 ${head.tree_size}, 루트 ${short(head.root)}의 트리 헤드는 체인의 키로 서명되지 않았습니다 (위조).`, head };
  const prev = storedHead();
  if (prev === 'corrupt') return { ok: false, text: '이 브라우저에 저장된 이전 트리 헤드가 손상되었습니다.', head };
  let how = '처음 검증한 헤드입니다 (이후 헤드는 이 헤드와의 일관성을 확인합니다).';
  if (prev) {
    if (!(await verifyHeadSignature(k.key, prev))) return { ok: false, text: '이 브라우저에 저장된 이전 트리 헤드의 서명이 올바르지 않습니다 (변조).', head };
    if (head.tree_size < prev.tree_size || head.timestamp < prev.timestamp) {
      return { ok: false, text: `순서 오류: 크기 ${head.tree_size}의 헤드는 이전에 검증한 헤드(크기 ${prev.tree_size})보다 오래되었습니다.`, head };
    }
    if (head.tree_size === prev.tree_size) {
      if (head.root !== prev.root) return { ok: false, text: `일관성 검증 실패: 같은 크기 ${head.tree_size}에 다른 루트가 있습니다 (기록 변조).`, head };
      how = `이전에 검증한 헤드(크기 ${prev.tree_size})와 같습니다.`;
    } else {
      let proof: string[];
      try {
        proof = (await publicApi.get('/api/token/chain/consistency', { query: { first: prev.tree_size, second: head.tree_size } })).consistency;
      } catch (err) {
        return { ok: false, text: problemText(err), head };
      }
      if (!(await verifyConsistency(prev.tree_size, head.tree_size, proof, prev.root, head.root))) {
        return { ok: false, text: `일관성 검증 실패: 크기 ${head.tree_size}의 기록이 이전에 검증한 크기 ${prev.tree_size}의 기록을 이어가지 않습니다 (기록 변조).`, head };
      }
      how = `이전에 검증한 헤드(크기 ${prev.tree_size})와의 일관성 증명을 확인했습니다.`;
    }
  }
  if (!prev || head.tree_size > prev.tree_size || head.timestamp > prev.timestamp) localStorage.setItem(STORE.head, JSON.stringify(head));
  return { ok: true, text: `검증됨: 크기 ${head.tree_size}, 루트 ${short(head.root)}, Ed25519 서명 확인. ${how}`, head };
}

function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
}
const enc = new TextEncoder();

/** A receipt: its hash over its canonical JSON, its head checked as above, then its leaf's inclusion. */
export async function verifyReceipt(hash: string): Promise<HeadCheck> {
  let r: { receipt?: unknown; proof: unknown; sth?: unknown; tree_head_error?: unknown };
  try {
    r = await relay.get('/api/token/receipt/:hash', { params: { hash } });
  } catch (err) {
    return { ok: false, text: problemText(err) };
  }
  if (hex(await sha256(enc.encode(canonical(r.receipt)))) !== hash) return { ok: false, text: '영수증 해시가 일치하지 않습니다.' };
  const p = r.proof as { leaf_index: number; tree_size: number; leaf_hash: string; audit_path: string[] } | null;
  if (!p) return { ok: false, text: '영수증 해시는 맞지만 아직 체인에 기록되지 않았습니다.' };
  const rc = r.receipt as { prev_hash: string; n: number; kind: string };
  const data = canonical({ id: `receipt:${hash}`, kind: 'receipt', data: { hash, prev_hash: rc.prev_hash, n: rc.n, kind: rc.kind } });
  if (hex(await leafHash(enc.encode(data))) !== p.leaf_hash) return { ok: false, text: '체인의 잎(leaf)이 영수증과 일치하지 않습니다.' };
  if (!isHead(r.sth)) {
    const code = typeof r.tree_head_error === 'string' ? r.tree_head_error : 'chain_key_not_configured';
    return { ok: false, text: messageFor(code, code, 'ko', 503) };
  }
  const head = await checkHead(r.sth);
  if (!head.ok) return head;
  if (p.tree_size !== head.head!.tree_size || !(await verifyInclusion(unhex(p.leaf_hash), p.leaf_index, p.tree_size, p.audit_path, head.head!.root))) {
    return { ok: false, text: '포함 증명이 검증한 트리 헤드의 루트와 맞지 않습니다.' };
  }
  return { ok: true, text: `체인에서 검증됨 (잎 ${p.leaf_index} / ${p.tree_size}, 서명된 헤드 확인)` };
}
