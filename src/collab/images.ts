import { randomBytes } from 'node:crypto';
import type { BlobStore } from '../blobs/index.js';
import { sweepOrphanBlobs } from '../blobs/index.js';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import type { StoredUpload, UploadKeeper } from '../hub/declare.js';
import { partitionKeyFor, partitionKeys, type Json, type Store } from '../store/port.js';
import { inspectUpload, type Scanner } from '../uploads/index.js';

/**
 * Images of documents (docs/collab.md "Images"): pasted or dropped into the editor, sent through the
 * hub's upload pipeline (the size limit, the type by content, the virus scan when CLAMD_URL is set,
 * the blob store: files under DATA_DIR/md-images or S3 under `md-images/`), recorded with their
 * document and served with its access rule. The text names an image by its address,
 * `/api/md/images/<slug>/<id>`; an image that no version of its document names any more (nor the
 * current text) is collected once it is older than the grace time.
 */

/** The types a document image may be (decided by content, src/uploads/sniff.ts). */
export const IMAGE_TYPES = ['image/png', 'image/jpeg'] as const;
/** Largest image in bytes (the hub's UPLOAD_MAX_BYTES when that is smaller). */
export const MAX_IMAGE_BYTES = 5 * 1_048_576;
/** An image's id: 64 random bits, hex. */
export const IMAGE_ID = /^[a-f0-9]{16}$/;
/** Every image address in a text; group 1 is the id. */
const IMAGE_REF = /\/api\/md\/images\/[^/\s)"'<>]+\/([a-f0-9]{16})/g;

export interface DocImage {
  id: string;
  slug: string;
  /** The blob store's key (never shown). */
  blob: string;
  type: string;
  size: number;
  /** The file name as the person's browser gave it. */
  name: string;
  by: string;
  created: number;
}

/**
 * Keys (docs/partitions.md): an image is part of its document's aggregate (`md:doc:<slug>`); its
 * blob pointer and the list of images are partition-local keys of that partition, so recording and
 * collecting an image are each one update of one partition.
 */
const IK = {
  image: (slug: string, id: string) => `md:doc:${slug}:image:${id}`,
  /** The image a blob belongs to (the orphan sweep of the image blobs asks every partition). */
  blob: (slug: string, key: string) => partitionKeyFor(`md:image-blob:${key}`, `md:doc:${slug}`),
  /** The images of a partition's documents, by creation time, as `<slug>/<id>` (the collection walks them). */
  all: (slug: string) => partitionKeyFor('md:images', `md:doc:${slug}`),
};

/** The address of an image in a document's text. */
export const imagePath = (slug: string, id: string) => `/api/md/images/${encodeURIComponent(slug)}/${id}`;

/** The ids of the images a text names. */
export function imageIds(text: string): Set<string> {
  return new Set([...text.matchAll(IMAGE_REF)].map((m) => m[1]!));
}

export interface DocImagesOptions {
  store: Store;
  blobs: BlobStore;
  clock: Clock;
  /** How long an image nothing names is kept (BLOB_ORPHAN_GRACE_MS). */
  graceMs: number;
  maxBytes: number;
  scanner?: Scanner | undefined;
}

export class DocImages {
  readonly maxBytes: number;
  constructor(private readonly opts: DocImagesOptions) {
    this.maxBytes = opts.maxBytes;
  }

  /**
   * What the hub runs on an uploaded image before the route's handler (multipart.keep): the scan
   * and the type by content (inspectUpload), then only PNG or JPEG, then the blob store.
   */
  keeper(): UploadKeeper {
    return {
      inspect: async (file) => {
        let type: string;
        try {
          // the type is the content's alone: a pasted image's name (image.png) claims nothing
          type = (await inspectUpload({ ...file, filename: file.filename.replace(/\.[^.]*$/, '') }, this.opts.scanner)).mediaType;
        } catch (err) {
          // the pipeline's own refusal of another type is said in the document's terms
          if (err instanceof AppError && err.code === 'unsupported_file_type') throw notAnImage((err.details as { detected?: string } | undefined)?.detected ?? 'not an image');
          throw err;
        }
        if (!(IMAGE_TYPES as readonly string[]).includes(type)) throw notAnImage(type);
        return { mediaType: type };
      },
      put: (file, mediaType) => this.opts.blobs.putFile(file.tempPath, { contentType: mediaType }),
      discard: (key) => this.opts.blobs.delete(key),
    };
  }

  /** Records a stored upload as an image of `slug` (its blob is discarded when the record is not written). */
  async record(slug: string, file: StoredUpload, by: string): Promise<DocImage> {
    const image: DocImage = { id: randomBytes(8).toString('hex'), slug, blob: file.blobKey, type: file.mediaType, size: file.size, name: file.filename, by, created: this.opts.clock.now() };
    try {
      await this.opts.store.update([IK.image(slug, image.id)], () => ({
        writes: [
          { op: 'set', key: IK.image(slug, image.id), value: image as unknown as Json },
          { op: 'set', key: IK.blob(slug, image.blob), value: `${slug}/${image.id}` },
          { op: 'index', key: IK.all(slug), member: `${slug}/${image.id}`, score: image.created },
        ],
        result: undefined,
      }));
    } catch (err) {
      await this.opts.blobs.delete(file.blobKey).catch(() => undefined);
      throw err;
    }
    return image;
  }

  /** An image of `slug` with its bytes; 404 unknown_image when the document has no such image. */
  async read(slug: string, id: string): Promise<{ image: DocImage; bytes: Buffer }> {
    const image = IMAGE_ID.test(id) ? await this.opts.store.get<Json>(IK.image(slug, id)) : undefined;
    if (!image) throw notFound('unknown_image', `${slug} has no image ${id}`, { slug, id });
    const rec = image as unknown as DocImage;
    const { stream } = await this.opts.blobs.get(rec.blob);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return { image: rec, bytes: Buffer.concat(chunks) };
  }

  /**
   * Collects the images older than the grace time that neither the current text nor any kept
   * version of their document names (a deleted document names none). `texts` gives a document's
   * current text and its versions' (undefined: no such document). The record goes first, then the
   * blob: a crash in between leaves a blob no record names, which `sweepBlobs` removes. Returns the
   * collected `<slug>/<id>`.
   */
  async collect(texts: (slug: string) => Promise<string[] | undefined>): Promise<string[]> {
    const now = this.opts.clock.now();
    const old = (await Promise.all(partitionKeys('md:images').map((key) => this.opts.store.indexRange(key, { max: now - this.opts.graceMs })))).flat();
    const named = new Map<string, Set<string>>();
    const collected: string[] = [];
    for (const { member } of old) {
      const cut = member.lastIndexOf('/');
      const slug = member.slice(0, cut);
      const id = member.slice(cut + 1);
      let ids = named.get(slug);
      if (!ids) {
        ids = new Set<string>();
        for (const t of (await texts(slug)) ?? []) for (const x of imageIds(t)) ids.add(x);
        named.set(slug, ids);
      }
      if (ids.has(id)) continue;
      const rec = (await this.opts.store.get<Json>(IK.image(slug, id))) as unknown as DocImage | undefined;
      await this.opts.store.update([IK.image(slug, id)], () => ({
        writes: [
          { op: 'del', key: IK.image(slug, id) },
          ...(rec ? [{ op: 'del' as const, key: IK.blob(slug, rec.blob) }] : []),
          { op: 'unindex', key: IK.all(slug), member },
        ],
        result: undefined,
      }));
      if (rec) await this.opts.blobs.delete(rec.blob);
      collected.push(member);
    }
    return collected;
  }

  /** Removes image blobs no record names (a crash between storing and recording, or during a collection). */
  sweepBlobs(): Promise<string[]> {
    const named = async (key: string) => (await this.opts.store.getMany(partitionKeys(`md:image-blob:${key}`))).some((v) => v !== undefined);
    return sweepOrphanBlobs(this.opts.blobs, named, { graceMs: this.opts.graceMs, now: this.opts.clock.now() });
  }
}

const notAnImage = (detected: string) =>
  new AppError('unsupported_media', 'not_an_image', `image: the file is ${detected}; a document image is PNG or JPEG`, { field: 'image', detected, accepted: ['png', 'jpeg'] });
