import { describe, expect, it } from 'vitest';
import { BUILDING_TYPES, DB_FEE, DOC_TYPES, IPA_BASE_FEE, IPA_FEES, PRODUCTS, RENTAL_TYPES, TERM_MONTHS, catalogue, feesFor, isDocType, isRentalType } from '../../src/rental/catalog.js';

// doc 1, "Rental intake": a 36-month rental of SOL-702 (fire alarm, from 300000 KRW a month, by
// building type; docs/rental.md) or SOL-701 (830000 KRW), with three documents.

describe('rental fees', () => {
  it('are 36 months of the monthly fee', () => {
    expect(TERM_MONTHS).toBe(36);
    expect(feesFor('rental-db', null)).toEqual({ monthlyFee: 830_000, termMonths: 36, totalFee: 29_880_000 });
    expect(feesFor('rental-ipa', null)).toEqual({ monthlyFee: 300_000, termMonths: 36, totalFee: 10_800_000 });
  });

  it('SOL-702 starts at 300000 and follows the building type; SOL-701 is one fee', () => {
    expect(IPA_BASE_FEE).toBe(300_000);
    expect(DB_FEE).toBe(830_000);
    expect(IPA_FEES).toEqual({ school: 300_000, office: 350_000, welfare: 320_000, culture: 380_000, other: 400_000 });
    for (const b of BUILDING_TYPES) {
      expect(feesFor('rental-ipa', b).monthlyFee, b).toBe(IPA_FEES[b]);
      expect(feesFor('rental-ipa', b).monthlyFee, b).toBeGreaterThanOrEqual(IPA_BASE_FEE);
      expect(feesFor('rental-db', b).monthlyFee, b).toBe(DB_FEE);
    }
    expect(feesFor('rental-ipa', 'office').totalFee).toBe(12_600_000);
  });

  it('names the products by their codes', () => {
    expect(RENTAL_TYPES).toEqual(['rental-ipa', 'rental-db']);
    expect(PRODUCTS).toEqual({
      'rental-ipa': { code: 'SOL-702', badge: 'ipa', name: '디지털 화재감지기' },
      'rental-db': { code: 'SOL-701', badge: 'db', name: '업무용 데이터베이스 관리 세트' },
    });
  });
});

describe('catalogue and names', () => {
  it('recognises only its own types and documents', () => {
    expect(isRentalType('rental-ipa')).toBe(true);
    expect(isRentalType('rental-xyz')).toBe(false);
    expect(isRentalType('')).toBe(false);
    expect(DOC_TYPES).toEqual(['bizCard', 'uniqueNumber', 'internalResolution']);
    expect(isDocType('uniqueNumber')).toBe(true);
    expect(isDocType('passport')).toBe(false);
  });

  it('shows every product with its fee per building type, SOL-702 preselected', () => {
    const c = catalogue();
    expect(c.termMonths).toBe(36);
    expect(c.products.map((p) => [p.type, p.code, p.preselected, p.monthlyFee])).toEqual([
      ['rental-ipa', 'SOL-702', true, 300_000],
      ['rental-db', 'SOL-701', false, 830_000],
    ]);
    expect(c.products[0]!.fees).toEqual(IPA_FEES);
    expect(Object.values(c.products[1]!.fees)).toEqual(BUILDING_TYPES.map(() => 830_000));
    expect(c.buildingTypes.map((b) => b.value)).toEqual([...BUILDING_TYPES]);
    expect(c.buildingTypes.every((b) => b.label.length > 0)).toBe(true);
    expect(c.documents.map((d) => d.field)).toEqual([...DOC_TYPES]);
    expect(c.documents.every((d) => d.label.length > 0)).toBe(true);
    expect(c.statuses.map((s) => s.value)).toEqual(['pending', 'documents_submitted', 'under_review', 'approved', 'rejected']);
    expect(c.statuses.every((s) => s.label.length > 0)).toBe(true);
  });
});
