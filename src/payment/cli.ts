import { loadConfig } from '../config.js';
import { systemClock } from '../clock.js';
import { openStore } from '../store/open.js';
import { Idempotency } from '../idempotency.js';
import { checkLedger } from './check.js';
import { PegService } from './peg.js';
import { PayoutService } from './payouts.js';
import { verifyReceiptChain } from './receipts.js';
import { ppm } from './rules.js';
import { PaymentService } from './service.js';

/**
 * Operator commands on the payment relay's store (the same settings as the hub: DATA_DIR or REDIS_URL):
 *   node dist/src/payment/cli.js check              recompute balances from the log, verify receipts
 *   node dist/src/payment/cli.js payout-run <week>  run one week's payout (exactly once per user),
 *                                                   printing one JSON line per user, then the report
 */
const [cmd, arg] = process.argv.slice(2);
const config = loadConfig();
const store = await openStore(config);
try {
  if (cmd === 'check') {
    const ledger = await checkLedger(store);
    const receipts = await verifyReceiptChain(store);
    console.log(JSON.stringify({ ledger, receipts }));
    process.exitCode = ledger.ok && receipts.ok ? 0 : 1;
  } else if (cmd === 'payout-run' && arg) {
    const service = new PaymentService({ store, clock: systemClock, peg: new PegService([], { windowMs: 1, maxGapMs: 1, minProviders: 2 }), idempotency: new Idempotency(store, systemClock), maxOnrampKrw: 0 });
    const payouts = new PayoutService(service, {
      scalePpm: ppm(config.PAYOUT_SCALE_RATIO), disciplinePpm: ppm(config.PAYOUT_DISCIPLINE), breakerPercent: 5n, poolFactor: 2n,
      catchUpWeeks: config.PAYOUT_CATCHUP_WEEKS, leaseMs: 60_000,
    });
    const report = await payouts.runWeek(arg, (user, status) => console.log(JSON.stringify({ user, status })));
    console.log(JSON.stringify({ report }));
  } else {
    console.error('usage: cli.js check | payout-run <YYYY-Www>');
    process.exitCode = 2;
  }
} finally {
  await store.close();
}
