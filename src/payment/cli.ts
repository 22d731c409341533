import { loadConfigOrExit } from '../config.js';
import { systemClock } from '../clock.js';
import { openStore } from '../store/open.js';
import { Idempotency } from '../idempotency.js';
import { checkLedger } from './check.js';
import { PegService } from './peg.js';
import { PayoutService } from './payouts.js';
import { verifyReceiptChain } from './receipts.js';
import { parseKnownHead, type KnownHead } from './chain-keys.js';
import { resetTreeHead } from './tree-heads.js';
import { ppm } from './rules.js';
import { PaymentService } from './service.js';

/**
 * Operator commands on the payment relay's store (the same settings as the hub: DATA_DIR or REDIS_URL):
 *   node dist/src/payment/cli.js check              recompute balances from the log, verify receipts
 *   node dist/src/payment/cli.js payout-run <week>  run one week's payout (exactly once per user),
 *                                                   printing one JSON line per user, then the report
 *   node dist/src/payment/cli.js chain-reset [<tree_size>:<root>] [--by <name>]
 *                                                   recovery after a forged or rewritten chain head was
 *                                                   accepted: drops the kept head; the known-good head
 *                                                   given (else CHAIN_PINNED_HEAD) is the one the next
 *                                                   heads must extend
 */
const USAGE = 'usage: cli.js check | payout-run <YYYY-Www> | chain-reset [<tree_size>:<root hex>] [--by <name>]';
const [cmd, arg, ...rest] = process.argv.slice(2);
const config = loadConfigOrExit();
// a chain-reset's arguments are checked before the store is opened: a bad one changes nothing
let known: KnownHead | undefined;
let by = process.env.USER ?? 'cli';
if (cmd === 'chain-reset') {
  const args = arg?.startsWith('--') ? [arg, ...rest] : rest;
  const head = arg && !arg.startsWith('--') ? arg : undefined;
  if (args.length > 0 && !(args.length === 2 && args[0] === '--by' && /^[\w.@-]{1,64}$/.test(args[1]!))) {
    console.error(`chain-reset: unexpected arguments ${args.join(' ')}\n${USAGE}`);
    process.exit(2);
  }
  if (args[0] === '--by') by = args[1]!;
  const k = head === undefined ? config.CHAIN_PINNED_HEAD : parseKnownHead(head);
  if (k === undefined || typeof k === 'string') {
    console.error(`chain-reset: ${k ?? 'give the known-good head <tree_size>:<root hex>, or set CHAIN_PINNED_HEAD'}\n${USAGE}`);
    process.exit(2);
  }
  known = k;
}
const store = await openStore(config);
try {
  if (cmd === 'chain-reset' && known) {
    const r = await resetTreeHead(store, systemClock.now(), known, by);
    console.log(JSON.stringify({ reset: r }));
  } else if (cmd === 'check') {
    const ledger = await checkLedger(store);
    const receipts = await verifyReceiptChain(store);
    console.log(JSON.stringify({ ledger, receipts }));
    process.exitCode = ledger.ok && receipts.ok ? 0 : 1;
  } else if (cmd === 'payout-run' && arg) {
    const service = new PaymentService({ store, clock: systemClock, peg: new PegService([], { windowMs: 1, maxGapMs: 1, minProviders: 2 }), idempotency: new Idempotency(store, systemClock), maxOnrampKrw: 0 });
    const payouts = new PayoutService(service, store, {
      scalePpm: ppm(config.PAYOUT_SCALE_RATIO), disciplinePpm: ppm(config.PAYOUT_DISCIPLINE), breakerPercent: 5n, poolFactor: 2n,
      catchUpWeeks: config.PAYOUT_CATCHUP_WEEKS, leaseMs: 60_000,
    });
    const report = await payouts.runWeek(arg, (user, status) => console.log(JSON.stringify({ user, status })));
    console.log(JSON.stringify({ report }));
  } else {
    console.error(USAGE);
    process.exitCode = 2;
  }
} finally {
  await store.close();
}
