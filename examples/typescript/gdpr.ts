/**
 * A data subject's rights with mnemo: export everything held about them
 * (GDPR art. 15/20), erase them (art. 17), and keep the erasure's receipt.
 *
 *   export MNEMO_URL=http://127.0.0.1:8080
 *   export MNEMO_TOKEN=$(mnemo token --tenant acme --scope all)   # needs gdpr:export and gdpr:erase
 *   cd sdks/typescript && npm run example:gdpr -- user-42 [export.json]
 *
 * The subject is the first argument (or MNEMO_SUBJECT). With a second
 * argument, the export is written to that file as JSON.
 */
import { writeFileSync } from "node:fs";

import { MnemoClient, MnemoError } from "@mnemo/client";

const subject = process.argv[2] || process.env.MNEMO_SUBJECT;
if (!subject) {
  console.error("usage: gdpr.js SUBJECT [EXPORT_FILE]  (or set MNEMO_SUBJECT)");
  process.exit(2);
}
const file = process.argv[3];

const mnemo = new MnemoClient(); // MNEMO_URL and MNEMO_TOKEN

try {
  // 1. Right of access: everything held about the subject, read from the log.
  const data = await mnemo.exportSubject(subject);
  console.log(
    `export of ${data.subject}: ${data.counts.messages} message(s), ${data.counts.memories} memory(ies), ${data.counts.events} event(s)`,
  );
  if (file) {
    writeFileSync(file, JSON.stringify(data, null, 2));
    console.log(`export written to ${file}`);
  }

  // 2. Right to erasure: the subject's keys are destroyed (crypto-shredding).
  const erasure = await mnemo.eraseSubject(subject);
  console.log(`erasure ${erasure.erasure_id} ${erasure.status}`);

  // 3. The receipt: what was destroyed, in which store.
  const done = await mnemo.waitForErasure(erasure.erasure_id, { timeoutMs: 60_000 });
  const receipt = done.receipt!;
  console.log(`erasure ${done.erasure_id} ${done.status} at ${receipt.completed_at}: ${receipt.events_shredded} event(s) shredded`);
  for (const step of receipt.steps) {
    console.log(`  ${step.store}: ${step.action} ${step.count}${step.note ? ` (${step.note})` : ""}`);
  }

  // 4. Nothing of the subject's content is left to export.
  const after = await mnemo.exportSubject(subject);
  console.log(`export after erasure: ${after.messages.length} message(s), ${after.memories.length} memory(ies)`);
} catch (error) {
  if (error instanceof MnemoError) {
    console.error(`mnemo answered ${error.status} ${error.code}: ${error.message}`);
    process.exit(1);
  }
  throw error;
}
