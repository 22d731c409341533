import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { Reply, route, type Hub, type RequestContext } from '../hub/declare.js';
import { badRequest } from '../errors.js';
import { datasetView, deletedAnswer, runAnswer, runsAnswer } from './answers.js';
import { DATASET_ID, DATASET_MAX_BYTES, DATASET_MAX_ROWS, DATASET_MIN_ROWS, DATASETS_PER_OWNER, type DatasetService } from './datasets.js';
import { RUN_ID, RUNS_PER_OWNER, RUN_RESULT_BYTES, type RunService } from './runs.js';
import { SYMBOLS, TIMEFRAMES } from './symbols.js';

/**
 * A trader's data sets (upload, list, describe, delete) and saved runs (list, open, delete):
 * docs/trading.md "Data sets" and "Saved runs". Every route needs a bearer token of role trader
 * (an operator passes too) and sees the caller's own records only: another trader's is 404.
 */

const TRADER = { roles: ['trader'] } as const;
const owner = (ctx: RequestContext) => ctx.identity!.id;

const uploadFields = z.strictObject({
  name: z.string().trim().min(1).max(80),
  /** The contract whose tick and point value the engine uses. */
  symbol: z.enum(SYMBOLS),
  /** The bar length; omitted: the most frequent time difference. */
  timeframe: z.enum(TIMEFRAMES).optional(),
});

const dsParams = z.object({ id: z.string().regex(DATASET_ID, 'must be a data set id such as ds_…') });
const runParams = z.object({ id: z.string().regex(RUN_ID, 'must be a saved run id such as r_…') });

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type DatasetRoutes = ReturnType<typeof registerDatasetRoutes>;
export type RunRoutes = ReturnType<typeof registerRunRoutes>;

export function registerDatasetRoutes(hub: Hub, datasets: DatasetService) {
  const postDatasets = route({
    method: 'POST',
    path: '/datasets',
    auth: TRADER,
    response: { 201: z.object({ dataset: datasetView }) },
    body: { schema: uploadFields, multipart: { files: ['file'], fields: ['name', 'symbol', 'timeframe'], maxFields: 3, maxFileBytes: DATASET_MAX_BYTES, maxRequestBytes: DATASET_MAX_BYTES + 65_536 } },
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const file = ctx.files?.[0];
      if (!file) throw badRequest('file_required', 'send the CSV in the form field file');
      const lines = createInterface({ input: createReadStream(file.tempPath, { encoding: 'utf8' }), crlfDelay: Infinity });
      try {
        const dataset = await datasets.create(owner(ctx), { ...ctx.body, filename: file.filename, bytes: file.size }, lines);
        return Reply.json({ dataset }, 201);
      } finally {
        lines.close();
      }
    },
  });
  const getDatasets = route({
    method: 'GET',
    path: '/datasets',
    auth: TRADER,
    cacheControl: 'no-store',
    response: z.object({ datasets: z.array(datasetView), limits: z.object({ datasets: z.number().int(), rows: z.number().int(), min_rows: z.number().int(), bytes: z.number().int() }) }),
    handler: async (ctx) => ({
      datasets: await datasets.list(owner(ctx)),
      limits: { datasets: DATASETS_PER_OWNER, rows: DATASET_MAX_ROWS, min_rows: DATASET_MIN_ROWS, bytes: DATASET_MAX_BYTES },
    }),
  });
  const getDataset = route({ method: 'GET', path: '/datasets/:id', auth: TRADER, params: dsParams, cacheControl: 'no-store', response: z.object({ dataset: datasetView }), handler: async (ctx) => ({ dataset: await datasets.get(owner(ctx), ctx.params.id) }) });
  const deleteDataset = route({ method: 'DELETE', path: '/datasets/:id', auth: TRADER, params: dsParams, cacheControl: 'no-store', response: deletedAnswer, handler: (ctx) => datasets.delete(owner(ctx), ctx.params.id) });
  return hub.mount('/api/program', { postDatasets, getDatasets, getDataset, deleteDataset });
}

export function registerRunRoutes(hub: Hub, runs: RunService) {
  const getRuns = route({
    method: 'GET',
    path: '/runs',
    auth: TRADER,
    cacheControl: 'no-store',
    response: runsAnswer,
    handler: async (ctx) => ({ runs: await runs.list(owner(ctx)), limits: { runs: RUNS_PER_OWNER, result_bytes: RUN_RESULT_BYTES } }),
  });
  const getRun = route({ method: 'GET', path: '/runs/:id', auth: TRADER, params: runParams, cacheControl: 'no-store', response: runAnswer, handler: async (ctx) => ({ run: await runs.get(owner(ctx), ctx.params.id) }) });
  const deleteRun = route({ method: 'DELETE', path: '/runs/:id', auth: TRADER, params: runParams, cacheControl: 'no-store', response: deletedAnswer, handler: (ctx) => runs.delete(owner(ctx), ctx.params.id) });
  return hub.mount('/api/program', { getRuns, getRun, deleteRun });
}
