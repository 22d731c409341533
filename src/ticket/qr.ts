import QRCode from 'qrcode';

/**
 * QR images of ticket codes, made with the `qrcode` package: PNG, error correction M, the standard
 * 4-module quiet zone, 8 pixels per module (a 29x29 code becomes 296 px, crisp on a phone and easy
 * for a gate camera). The payload is the ticket code itself ("TK-XXXXXXXX"). Images are cached per
 * code (a code never changes), up to CACHE_MAX entries.
 */
export const QR_OPTIONS = { type: 'png', errorCorrectionLevel: 'M', margin: 4, scale: 8 } as const;
const CACHE_MAX = 2000;

export interface QrImage {
  png: Buffer;
  dataUrl: string;
}

const cache = new Map<string, QrImage>();

export async function qrImage(text: string): Promise<QrImage> {
  const hit = cache.get(text);
  if (hit) return hit;
  const png = await QRCode.toBuffer(text, QR_OPTIONS);
  const img = { png, dataUrl: `data:image/png;base64,${png.toString('base64')}` };
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(text, img);
  return img;
}
