/**
 * The SDK's test suite: one real `mnemo serve` for the whole run, started
 * before the first test and stopped after the last; each test uses its own
 * subject. Run with `scripts/test` (or `npm run build && npm run build:test
 * && node --test .build/sdks/typescript/test/suite.test.js`).
 */
import { after, before, describe } from "node:test";

import { agent } from "./agent.cases.js";
import { asOf } from "./asof.cases.js";
import { errors } from "./errors.cases.js";
import { examples } from "./examples.cases.js";
import { mnemo } from "./harness.js";
import { operations } from "./operations.cases.js";
import { pagination } from "./pagination.cases.js";
import { retries } from "./retry.cases.js";

describe("@mnemo/client against mnemo serve", { timeout: 600_000 }, () => {
  before(() => mnemo.start(), { timeout: 180_000 });
  after(() => mnemo.stop());

  describe("operations", operations);
  describe("errors", errors);
  describe("retries", retries);
  describe("pagination and reviews", pagination);
  describe("as-of reads, changes and subjects", asOf);
  describe("agentTurn", agent);
  describe("examples", examples);
});
