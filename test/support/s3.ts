/** A real S3-compatible server (s3rver) on loopback, with one bucket, for the S3 adapter tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}

export interface RunningS3 {
  url: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

export async function startS3(bucket = 'maru-test'): Promise<RunningS3> {
  const S3rver = require('s3rver') as new (opts: object) => S3rverInstance;
  const directory = mkdtempSync(join(tmpdir(), 'maru-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
  const { port } = await server.run();
  return {
    url: `http://127.0.0.1:${port}`,
    bucket,
    // s3rver's built-in account
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async stop() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
