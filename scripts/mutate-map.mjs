/**
 * Which tests exercise which module, for mutation testing (scripts/mutate.mjs, stryker.config.mjs).
 * A run of one module runs only these test files: in-process unit, rule and property tests. Tests
 * that start a hub process run the built dist/ code, which Stryker does not mutate, so listing them
 * would only cost time.
 */
export const MUTATION_MAP = {
  'src/ticket/code.ts': ['test/ticket/code-bingo.test.ts', 'test/rules/ticket-code.rules.test.ts'],
  'src/store/checks.ts': ['test/rules/store-checks.rules.test.ts'],
  'src/rental/status.ts': ['test/rules/rental-status.rules.test.ts'],
  'src/hub/router.ts': ['test/hub/router.test.ts', 'test/rules/hub-router.rules.test.ts'],
  'src/ticket/bingo.ts': ['test/ticket/code-bingo.test.ts', 'test/rules/ticket-bingo.rules.test.ts'],
  'src/collab/search.ts': ['test/collab/search.test.ts', 'test/rules/collab-search.rules.test.ts'],
  // test/trading/analyses.test.ts exercises metrics too, but runs full backtests: minutes per mutant.
  'src/trading/metrics.ts': ['test/rules/trading-metrics.rules.test.ts'],
  'src/reward/plan.ts': ['test/reward/plan.test.ts', 'test/rules/reward-plan.rules.test.ts'],
  'src/chat/machine.ts': ['test/chat/service.test.ts', 'test/rules/chat-machine.rules.test.ts'],
  'src/payment/ledger.ts': ['test/payment/ledger.property.test.ts', 'test/rules/payment-ledger.rules.test.ts'],
  'src/trading/indicators.ts': ['test/trading/indicators.test.ts', 'test/rules/trading-indicators.rules.test.ts'],
  // the fixed numbers: presence timeout, Monte Carlo runs, walk-forward windows
  'src/collab/presence.ts': ['test/rules/limits.rules.test.ts', 'test/rules/collab-presence.rules.test.ts'],
  'src/trading/rules.ts': ['test/rules/limits.rules.test.ts', 'test/rules/trading-rules.rules.test.ts'],
  'src/rental/files.ts': ['test/rules/rental-files.rules.test.ts'],
  'src/chat/classify.ts': ['test/chat/classify.test.ts', 'test/rules/chat-classify.rules.test.ts'],
  'src/coach/owner-id.ts': ['test/rules/coach-owner-id.rules.test.ts'],
  'src/chat/referral-code.ts': ['test/rules/chat-referral-code.rules.test.ts'],
  'src/payment/peg.ts': ['test/rules/payment-peg.rules.test.ts'],
  'src/rental/catalog.ts': ['test/rules/rental-catalog.rules.test.ts'],
  'src/auth/passwords.ts': ['test/rules/auth-passwords.rules.test.ts'],
  'src/collab/locks.ts': ['test/rules/collab-locks.rules.test.ts'],
  'src/hub/guards.ts': ['test/rules/hub-guards.rules.test.ts'],
  'src/hub/security.ts': ['test/rules/hub-guards.rules.test.ts'],
  'src/store/codec.ts': ['test/store/codec.test.ts', 'test/rules/store-codec.rules.test.ts'],
  'src/intake/input.ts': ['test/rules/intake-input.rules.test.ts'],
  'src/text.ts': ['test/rules/text.rules.test.ts', 'test/rules/intake-input.rules.test.ts'],
  'src/rental/review.ts': ['test/rules/rental-review.rules.test.ts'],
  'src/ticket/service.ts': ['test/rules/ticket-service.rules.test.ts'],
  'src/chat/referral.ts': ['test/rules/chat-referral.rules.test.ts'],
  'src/idempotency.ts': ['test/rules/payment-idempotency.rules.test.ts'],
  'src/payment/receipts.ts': ['test/rules/payment-receipts.rules.test.ts'],
  'src/payment/payouts.ts': ['test/rules/payment-payouts.rules.test.ts'],
  'src/hub/credentials.ts': ['test/hub/credentials.test.ts', 'test/rules/hub-credentials.rules.test.ts'],
  'src/hub/multipart.ts': ['test/rules/hub-multipart.rules.test.ts'],
  'src/hub/part-headers.ts': ['test/rules/hub-part-headers.rules.test.ts'],
  'src/coach/service.ts': ['test/rules/coach-service.rules.test.ts'],
  // argon2 is replaced by a stand-in in the rule tests (passwords.ts has its own)
  'src/auth/service.ts': ['test/rules/auth-service.rules.test.ts'],
  'src/collab/model.ts': ['test/rules/collab-model.rules.test.ts'],
  'src/chat/contact.ts': ['test/rules/chat-contact.rules.test.ts'],
  'src/chat/intake-link.ts': ['test/rules/chat-intake-link.rules.test.ts'],
  'src/chat/service.ts': ['test/chat/service.test.ts', 'test/rules/chat-service.rules.test.ts'],
  'src/chat/view.ts': ['test/rules/chat-view.rules.test.ts'],
  'src/outbox/records.ts': ['test/rules/outbox-records.rules.test.ts'],
  'src/outbox/holds.ts': ['test/rules/outbox-holds.rules.test.ts'],
  'src/outbox/attempt.ts': ['test/rules/outbox-holds.rules.test.ts'],
  // test/outbox.test.ts is left out: its hub test needs dist/, which the mutation sandbox does not copy
  'src/outbox/outbox.ts': ['test/ha/outbox-claim-fence.test.ts', 'test/rules/outbox-outbox.rules.test.ts', 'test/rules/outbox-pacing.rules.test.ts'],
  'src/bus/history.ts': ['test/bus/history.test.ts', 'test/rules/bus-history.rules.test.ts'],
  'src/payment/rules.ts': ['test/payment/rules.test.ts', 'test/rules/payment-rules.rules.test.ts'],
  'src/payment/merkle.ts': ['test/payment/rules.test.ts', 'test/payment/consistency.property.test.ts', 'test/payment/wallet-verifier.property.test.ts', 'test/rules/payment-merkle.rules.test.ts'],
  // the five strategies: the streaming runs, the batch fills and the shared-series grid loop, against a plain restatement of each rule
  'src/trading/strategy-rules.ts': ['test/trading/batch.test.ts', 'test/rules/trading-strategies.rules.test.ts'],
  'src/trading/strategy-runs.ts': ['test/trading/batch.test.ts', 'test/rules/trading-strategies.rules.test.ts'],
  'src/trading/batch.ts': ['test/trading/batch.test.ts', 'test/rules/trading-strategies.rules.test.ts'],
  'src/trading/strategies.ts': ['test/trading/batch.test.ts', 'test/rules/trading-strategies.rules.test.ts'],
  'src/hub/keep.ts': ['test/hub/keep.test.ts'],
  // the bank's SSO token against a key set on a loopback server and PEM keys
  'src/payment/sso.ts': ['test/rules/payment-sso.rules.test.ts'],
  // untrusted input before any handler: query numbers and texts, JSON bodies and their limits
  'src/hub/query.ts': ['test/rules/hub-inputs.rules.test.ts'],
  'src/hub/body.ts': ['test/rules/hub-inputs.rules.test.ts'],
  // the one check-in transition, its audit trail and offline settlement (test/ticket/offline.test.ts is left
  // out: the app it starts needs dist/ for its worker pool, which the mutation sandbox does not copy)
  'src/ticket/checkin.ts': ['test/ticket/service.test.ts', 'test/rules/ticket-service.rules.test.ts', 'test/rules/ticket-checkin.rules.test.ts'],
  // the signed offline check-in lists and their key
  'src/ticket/offline.ts': ['test/rules/ticket-offline.rules.test.ts'],
  'src/reward/movements.ts': ['test/rules/reward-movements.rules.test.ts'],
  'src/intake/service.ts': ['test/intake/service.test.ts', 'test/rules/intake-service.rules.test.ts'],
  'src/reward/inputs.ts': ['test/rules/reward-inputs.rules.test.ts'],
  // uploaded files typed by their content (HWP, HWPX, PDF, JPEG, PNG)
  'src/uploads/sniff.ts': ['test/uploads/sniff.test.ts', 'test/rules/uploads-sniff.rules.test.ts'],
  // the risk controls (daily loss limit, maximum positions, daily trade limit, schedule) and the
  // bounds of a run's settings, alone and as both engines apply them
  'src/trading/risk.ts': ['test/trading/engine.test.ts', 'test/rules/trading-risk.rules.test.ts'],
  'src/trading/engine-settings.ts': ['test/trading/engine.test.ts', 'test/rules/trading-risk.rules.test.ts'],
  // fills, stops, targets, P&L and the risk controls: the streaming engine of live programs, held to
  // its batch loop to the bit. The batch loop itself (engine-batch.ts) is not mapped: see
  // docs/mutation.md, "Not mapped".
  'src/trading/engine.ts': ['test/trading/engine.test.ts', 'test/rules/trading-risk.rules.test.ts', 'test/rules/trading-engine.rules.test.ts'],
  // member keys, the signed work and exchange messages, the skew window and the replay memory (test/reward/signing.test.ts
  // is left out: its CLI tests run dist/, which the mutation sandbox does not copy)
  'src/reward/signing.ts': ['test/rules/reward-signing.rules.test.ts'],
  // the challenge engine: learning credit, pass, collateral, deductions within 30 days, withdrawal (programs-binding.test.ts
  // runs on the real clock with live programs, and the payout tests only use it to pass a challenge)
  'src/payment/lifecycle.ts': ['test/payment/collateral.test.ts', 'test/payment/collateral-former.test.ts', 'test/payment/late-fill.test.ts', 'test/rules/payment-lifecycle.rules.test.ts'],
};

/**
 * Modules run with every mapped test against every mutant (coverageAnalysis `all`) instead of the
 * tests Stryker saw covering it: slower, and independent of how per-test coverage attributes code
 * that runs inside a store update's callback or in a closure made when a file is collected. Each of
 * these had mutants reported surviving that fail a mapped test when applied by hand: the check-in
 * transition, an idempotency key's finish, a presence heartbeat, a plain codec's refusal, a store
 * plan's check.
 */
export const ALL_TESTS_PER_MUTANT = new Set(['src/ticket/checkin.ts', 'src/idempotency.ts', 'src/collab/presence.ts', 'src/store/codec.ts', 'src/store/checks.ts']);

/** Smallest first: the order `npm run mutate` (no argument) runs them in. */
export const MUTATION_ORDER = Object.keys(MUTATION_MAP);
