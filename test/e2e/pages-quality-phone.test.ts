import { pageQualitySuite } from '../support/pages-quality.js';

// every page at a phone's width (the desktop's in pages-quality.test.ts)
pageQualitySuite([360]);
