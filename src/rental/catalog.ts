/**
 * Rental products, fees, building types and the three documents (doc 1, "Rental intake and
 * partner review"; the decisions the document leaves open are in docs/rental.md).
 */

export const TERM_MONTHS = 36;

export const RENTAL_TYPES = ['rental-ipa', 'rental-db'] as const;
export type RentalType = (typeof RENTAL_TYPES)[number];

export const isRentalType = (type: string): type is RentalType => (RENTAL_TYPES as readonly string[]).includes(type);

export interface Product {
  code: 'SOL-702' | 'SOL-701';
  badge: 'ipa' | 'db';
  name: string;
}

export const PRODUCTS: Record<RentalType, Product> = {
  'rental-ipa': { code: 'SOL-702', badge: 'ipa', name: '디지털 화재감지기' },
  'rental-db': { code: 'SOL-701', badge: 'db', name: '업무용 데이터베이스 관리 세트' },
};

/**
 * Building types (a single choice on the form). SOL-702's monthly fee is set by the building type:
 * the fire alarm needs more detectors and wiring in larger, busier buildings. The base 300000 KRW
 * ("from 300000") applies to schools and when no building type is given. SOL-701 is one fee.
 */
export const BUILDING_TYPES = ['school', 'office', 'welfare', 'culture', 'other'] as const;
export type BuildingType = (typeof BUILDING_TYPES)[number];

export const BUILDING_LABELS: Record<BuildingType, string> = {
  school: '학교',
  office: '관공서·청사',
  welfare: '복지·보육시설',
  culture: '문화·체육시설',
  other: '기타',
};

export const IPA_BASE_FEE = 300_000;
export const IPA_FEES: Record<BuildingType, number> = {
  school: 300_000,
  office: 350_000,
  welfare: 320_000,
  culture: 380_000,
  other: 400_000,
};
export const DB_FEE = 830_000;

export interface Fees {
  monthlyFee: number;
  termMonths: number;
  totalFee: number;
}

/** The monthly fee, term and total (fee x 36) of a rental type and building type. */
export function feesFor(type: RentalType, buildingType: BuildingType | null): Fees {
  const monthlyFee = type === 'rental-db' ? DB_FEE : buildingType ? IPA_FEES[buildingType] : IPA_BASE_FEE;
  return { monthlyFee, termMonths: TERM_MONTHS, totalFee: monthlyFee * TERM_MONTHS };
}

export const DOC_TYPES = ['bizCard', 'uniqueNumber', 'internalResolution'] as const;
export type DocType = (typeof DOC_TYPES)[number];
export const isDocType = (s: string): s is DocType => (DOC_TYPES as readonly string[]).includes(s);

export const DOC_LABELS: Record<DocType, string> = {
  bizCard: '담당자 명함',
  uniqueNumber: '고유번호증',
  internalResolution: '내부결의서(회의록)',
};

export const STATUSES = ['pending', 'documents_submitted', 'under_review', 'approved', 'rejected'] as const;
export type RentalStatus = (typeof STATUSES)[number];

export const STATUS_LABELS: Record<RentalStatus, string> = {
  pending: '접수대기',
  documents_submitted: '서류제출',
  under_review: '검토중',
  approved: '승인',
  rejected: '반려',
};

/** The catalogue as the form shows it: products with their fees, building types, documents, statuses. */
export function catalogue() {
  return {
    termMonths: TERM_MONTHS,
    products: RENTAL_TYPES.map((type) => ({
      type,
      ...PRODUCTS[type],
      preselected: type === 'rental-ipa',
      monthlyFee: feesFor(type, null).monthlyFee,
      fees: Object.fromEntries(BUILDING_TYPES.map((b) => [b, feesFor(type, b).monthlyFee])),
    })),
    buildingTypes: BUILDING_TYPES.map((value) => ({ value, label: BUILDING_LABELS[value] })),
    documents: DOC_TYPES.map((field) => ({ field, label: DOC_LABELS[field] })),
    statuses: STATUSES.map((value) => ({ value, label: STATUS_LABELS[value] })),
  };
}
