import { openBlobStore, sweepOrphanBlobs } from '../blobs/index.js';
import { registerIntakeMailRoutes } from './routes-mail.js';
import { registerRentalRoutes } from './routes.js';
import { IntakeService } from '../intake/index.js';
import { PartnerAudit } from './audit.js';
import { Review } from './review.js';
import { RentalService } from './service.js';
import { ClamdScanner } from '../uploads/index.js';
import { defineService } from '../contract.js';
import type { BlobStore } from '../blobs/index.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    intake: IntakeService;
    rental: RentalService;
    rentalFiles: BlobStore;
  }
}

/** Intake (receipts of every kind) and the rental applications with partner review (docs/rental.md). */
export const rentalModule = defineService({
  name: 'rental',
  // review decisions are mailed to the applicant through the outbox; the partner's sign-ins and
  // sign-outs, told by identity, go to the partner audit beside its review actions
  needs: ['mailer', 'signIns'],
  provides: ['intake', 'rental', 'rentalFiles'],
  async build(p, { mailer, signIns }) {
    const { config, store, clock, bus, logger } = p;
    const blobs = await openBlobStore(config);
    const intake = new IntakeService({ store, clock });
    const partnerAudit = new PartnerAudit(store, () => clock.now());
    signIns.onAttempt((attempt) => partnerAudit.signIn(attempt));
    const rental = new RentalService({
      intake,
      store,
      clock,
      bus,
      blobs,
      onBlobError: (err, key) => logger.warn({ err, key }, 'rental file not deleted'),
      ...(config.PUBLIC_URL ? { publicUrl: config.PUBLIC_URL } : {}),
    });
    // uploaded files no record names (a crash between storing a file and writing its record)
    const sweep = () =>
      void sweepOrphanBlobs(blobs, (key) => rental.references(key), { graceMs: config.BLOB_ORPHAN_GRACE_MS, now: Date.now() }).catch((err) =>
        logger.warn({ err }, 'orphan blob sweep failed'),
      );
    let timer: NodeJS.Timeout | undefined;
    return {
      name: 'rental',
      ports: { intake, rental, rentalFiles: blobs },
      routes(hub) {
        registerRentalRoutes(hub, {
          intake,
          service: rental,
          review: new Review(store, intake),
          audit: partnerAudit,
          blobs,
          scanner: config.CLAMD_URL ? new ClamdScanner(config.CLAMD_URL, { timeoutMs: config.CLAMD_TIMEOUT_MS }) : undefined,
          mailer,
        });
        registerIntakeMailRoutes(hub, { intake });
      },
      start() {
        timer = setInterval(sweep, Math.min(config.BLOB_ORPHAN_GRACE_MS, 600_000));
        timer.unref();
      },
      stop() {
        clearInterval(timer);
      },
    };
  },
});
