#!/usr/bin/env node
// Generates src/sqs/model.generated.ts from botocore's SQS service model.
//
// Usage: node scripts/gen-model.mjs <current service-2.json[.gz]> <query-era service-2.json>
//
// The current model (JSON protocol) has all 23 actions but no Query traits; the older,
// Query-protocol model (botocore < 1.31, Debian's python3-botocore) carries the flattened
// names (`Attribute.N.Name`, `SendMessageBatchRequestEntry.N`). Members newer than that model
// take their Query names from QUERY_NAMES below, copied from the AWS SDK for JavaScript v3
// schema (its xmlName traits), which still serialises them for query-compatible services.
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

const load = (p) => {
  const raw = readFileSync(p);
  return JSON.parse((p.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8'));
};
const [currentPath, queryPath] = process.argv.slice(2);
if (!currentPath || !queryPath) {
  console.error('usage: gen-model.mjs <current service-2.json[.gz]> <query-era service-2.json>');
  process.exit(2);
}
const cur = load(currentPath);
const old = load(queryPath);

const QUERY_NAMES = {
  'ReceiveMessageRequest.MessageSystemAttributeNames': 'AttributeName',
  'ListMessageMoveTasksResult.Results': 'ListMessageMoveTasksResultEntry',
  'ListDeadLetterSourceQueuesResult.queueUrls': 'QueueUrl',
};

function queryName(structName, memberName) {
  const key = `${structName}.${memberName}`;
  if (QUERY_NAMES[key]) return QUERY_NAMES[key];
  const os = old.shapes[structName];
  const om = os?.members?.[memberName];
  if (om) {
    if (om.locationName) return om.locationName;
    const target = old.shapes[om.shape];
    if (target?.type === 'list' && target.flattened && target.member?.locationName)
      return target.member.locationName;
    if (target?.type === 'map' && target.flattened && target.locationName) return target.locationName;
    return memberName;
  }
  const cm = cur.shapes[structName].members[memberName];
  const target = cur.shapes[cm.shape];
  if (target.type === 'list' || target.type === 'map')
    throw new Error(`no Query name known for the collection ${key}: add it to QUERY_NAMES`);
  return memberName;
}

function mapKeyNames(mapShapeName) {
  const om = old.shapes[mapShapeName];
  return { key: om?.key?.locationName ?? 'Name', value: om?.value?.locationName ?? 'Value' };
}

const emitted = new Map();
const order = [];
function shapeRef(name) {
  const s = cur.shapes[name];
  switch (s.type) {
    case 'string':
      return 'S';
    case 'integer':
    case 'long':
      return 'I';
    case 'boolean':
      return 'B';
    case 'blob':
      return 'BLOB';
    default:
      if (!emitted.has(name)) {
        emitted.set(name, null);
        emitted.set(name, shapeDef(name, s));
        order.push(name);
      }
      return `${name}Shape`;
  }
}
function shapeDef(name, s) {
  if (s.type === 'list') return `{ type: 'list', member: ${lazy(s.member.shape)} }`;
  if (s.type === 'map') {
    const k = mapKeyNames(name);
    return `{ type: 'map', key: ${lazy(s.key.shape)}, value: ${lazy(s.value.shape)}, keyName: '${k.key}', valueName: '${k.value}' }`;
  }
  if (s.type === 'structure') {
    const members = Object.entries(s.members)
      .map(([m, mv]) => `${m}: { shape: ${lazy(mv.shape)}, queryName: '${queryName(name, m)}' }`)
      .join(',\n      ');
    const req = JSON.stringify(s.required ?? []);
    return `{ type: 'structure', name: '${name}', required: ${req}, members: {\n      ${members}\n    } }`;
  }
  throw new Error(`unhandled shape ${name}: ${s.type}`);
}
function lazy(name) {
  const r = shapeRef(name);
  return r.endsWith('Shape') ? `() => ${r}` : r;
}

function tsType(name) {
  const s = cur.shapes[name];
  switch (s.type) {
    case 'string':
      return 'string'; // enums are checked by the handlers: clients may send anything
    case 'integer':
    case 'long':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'blob':
      return 'string';
    case 'list':
      return `${tsType(s.member.shape)}[]`;
    case 'map':
      return `Record<string, ${tsType(s.value.shape)}>`;
    case 'structure':
      return name;
    default:
      throw new Error(s.type);
  }
}

const ops = Object.keys(cur.operations).sort();
const structs = new Set();
function collectStructs(name) {
  const s = cur.shapes[name];
  if (s.type === 'structure') {
    if (structs.has(name)) return;
    structs.add(name);
    for (const m of Object.values(s.members)) collectStructs(m.shape);
  } else if (s.type === 'list') collectStructs(s.member.shape);
  else if (s.type === 'map') {
    collectStructs(s.key.shape);
    collectStructs(s.value.shape);
  }
}
const opLines = [];
for (const op of ops) {
  const o = cur.operations[op];
  collectStructs(o.input.shape);
  if (o.output) collectStructs(o.output.shape);
  const input = shapeRef(o.input.shape);
  const output = o.output ? shapeRef(o.output.shape) : 'undefined';
  opLines.push(`  ${op}: { input: ${input}, output: ${output} },`);
}

let out = `// Generated by scripts/gen-model.mjs from botocore's SQS model; do not edit by hand.\n`;
out += `import type { ObjectShape, Shape } from './shape.js';\n\n`;
out += `const S: Shape = { type: 'string' };\nconst I: Shape = { type: 'integer' };\nconst B: Shape = { type: 'boolean' };\nconst BLOB: Shape = { type: 'blob' };\n\n`;
for (const name of order) out += `const ${name}Shape: Shape = ${emitted.get(name)};\n`;
out += `\n`;
out += `export const operations = {\n${opLines.join('\n')}\n} as const satisfies Record<string, { input: Shape; output: Shape | undefined }>;\n\n`;
out += `export type ActionName = keyof typeof operations;\n`;
out += `export const actionNames = Object.keys(operations) as ActionName[];\n\n`;
out += `export type { ObjectShape };\n\n`;
for (const name of [...structs].sort()) {
  const s = cur.shapes[name];
  const req = new Set(s.required ?? []);
  const members = Object.entries(s.members).map(
    ([m, mv]) => `  ${m}${req.has(m) ? '' : '?'}: ${tsType(mv.shape)};`,
  );
  out += `export interface ${name} {\n${members.join('\n')}\n}\n`;
}
out += `\nexport interface ActionTypes {\n`;
for (const op of ops) {
  const o = cur.operations[op];
  out += `  ${op}: { input: ${o.input.shape}; output: ${o.output ? o.output.shape : 'Record<string, never>'} };\n`;
}
out += `}\n`;
writeFileSync(new URL('../src/sqs/model.generated.ts', import.meta.url), out);
console.log(`wrote ${ops.length} operations, ${structs.size} structures`);
