#!/usr/bin/env node
// shardlog compatibility runner for kafkajs (see README.md).
//   node run.js --bootstrap HOST:PORT --client kafkajs --version 2.2.4 --scenario produce-consume
// Exit 0 iff the cell behaved as matrix.json expects ("pass": the scenario passed;
// "not-yet": the interim assertion held).
'use strict'

const path = require('path')
const fs = require('fs')
const { createRequire } = require('module')

const HERE = __dirname
const req = createRequire(path.join(HERE, '.cache', 'package.json'))

function parseArgs(argv) {
  const out = {}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`)
    const eq = a.indexOf('=')
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1)
    else out[a.slice(2)] = argv[++i]
  }
  for (const k of ['bootstrap', 'client', 'version', 'scenario']) {
    if (!out[k]) throw new Error(`missing --${k}`)
  }
  return out
}

const t0 = Date.now()
const log = msg => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${msg}`)
const sleep = ms => new Promise(r => setTimeout(r, ms))

class CheckError extends Error {}
function check(cond, what) {
  if (!cond) throw new CheckError(what)
}
// JSON with object keys sorted, so that key order never matters
const canon = v => JSON.stringify(v, (k, x) =>
  x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x)
function eq(got, want, what) {
  const g = canon(got)
  const w = canon(want)
  if (g !== w) throw new CheckError(`${what}: expected ${w}, got ${g}`)
}
async function waitFor(cond, timeoutMs, what) {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    if (cond()) return
    await sleep(50)
  }
  if (!cond()) throw new CheckError(`timed out after ${timeoutMs / 1000}s waiting for ${what}`)
}
async function withTimeout(promise, ms, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckError(`${what} did not finish within ${ms / 1000}s`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

const uniq = (prefix) => `${prefix}-${Date.now().toString(36)}-${process.pid}`

// ---------------------------------------------------------------------------------------
let kafkajs
let kafka
const cleanups = []

function makeKafka(bootstrap) {
  const { Kafka, logLevel } = kafkajs
  return new Kafka({
    clientId: 'shardlog-compat-kafkajs',
    brokers: [bootstrap],
    connectionTimeout: 5000,
    requestTimeout: 15000,
    retry: { initialRetryTime: 100, retries: 5, maxRetryTime: 2000 },
    logLevel: process.env.KAFKAJS_LOG ? logLevel.DEBUG : logLevel.NOTHING,
  })
}

async function connected(client) {
  await withTimeout(client.connect(), 20000, 'connect')
  cleanups.push(() => client.disconnect())
  return client
}

function registerCodecs() {
  const { CompressionCodecs, CompressionTypes } = kafkajs
  CompressionCodecs[CompressionTypes.Snappy] = req('kafkajs-snappy')
  const LZ4Codec = req('kafkajs-lz4')
  CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec
}

async function createTopic(admin, topic, numPartitions, configEntries) {
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions, replicationFactor: 1, configEntries }],
    waitForLeaders: true,
    timeout: 10000,
  })
  eq(created, true, `createTopics(${topic}) result`)
}

// Consume `topic` with a fresh group until `want` records arrived (or timeout), then linger
// `lingerMs` to catch duplicates. Returns the list of {partition, offset, key, value, headers}.
async function consumeAll(topic, want, { groupId, timeoutMs = 60000, lingerMs = 1500 } = {}) {
  const consumer = kafka.consumer({
    groupId: groupId || uniq('g-fresh'),
    heartbeatInterval: 1000,
    sessionTimeout: 10000,
    rebalanceTimeout: 10000,
    maxWaitTimeInMs: 200,
  })
  await connected(consumer)
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push({
        partition,
        offset: Number(message.offset),
        key: message.key === null ? null : message.key.toString(),
        value: message.value === null ? null : message.value.toString(),
        headers: Object.fromEntries(
          Object.entries(message.headers || {}).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString() : v])
        ),
        timestamp: message.timestamp,
      })
    },
  })
  await waitFor(() => got.length >= want, timeoutMs, `${want} records from ${topic} (got ${got.length})`)
  await sleep(lingerMs)
  await consumer.disconnect()
  return got
}

// Check that every key k<i> arrived exactly once with value v<i>, in its expected partition,
// at consecutive offsets per partition in production order.
function checkExactlyOnce(got, expected, what) {
  eq(got.length, expected.length, `${what}: number of records consumed`)
  const byKey = new Map()
  for (const r of got) {
    check(!byKey.has(r.key), `${what}: key ${r.key} consumed twice (partition ${r.partition} offset ${r.offset})`)
    byKey.set(r.key, r)
  }
  const perPartition = new Map()
  for (const e of expected) {
    const r = byKey.get(e.key)
    check(r, `${what}: key ${e.key} never consumed`)
    eq(r.value, e.value, `${what}: value of ${e.key}`)
    eq(r.headers, e.headers || {}, `${what}: headers of ${e.key}`)
    if (e.partition !== undefined) eq(r.partition, e.partition, `${what}: partition of ${e.key}`)
    const next = perPartition.get(r.partition) || 0
    eq(r.offset, next, `${what}: offset of ${e.key} in partition ${r.partition} (per-partition order)`)
    perPartition.set(r.partition, next + 1)
  }
  return perPartition
}

// ---------------------------------------------------------------------------------------
// produce-consume: 3 partitions, 300 keyed records (every third with headers), acks=all,
// produced in 3 sends of 100; each send's per-partition baseOffset is checked; then a fresh
// consumer group reads everything: each key exactly once, in the partition the default
// (murmur2) partitioner picks, at consecutive offsets in production order.
async function scenarioProduceConsume() {
  const admin = await connected(kafka.admin())
  const topic = uniq('pc')
  await createTopic(admin, topic, 3)
  log(`created topic ${topic} with 3 partitions`)
  const meta = await admin.fetchTopicMetadata({ topics: [topic] })
  const partitionMetadata = meta.topics[0].partitions
  eq(partitionMetadata.length, 3, 'partitions in metadata')

  const partitioner = kafkajs.Partitioners.DefaultPartitioner()
  const producer = await connected(kafka.producer({ idempotent: false, allowAutoTopicCreation: false }))
  const expected = []
  for (let i = 0; i < 300; i++) {
    const e = { key: `k${i}`, value: `v${i}` }
    if (i % 3 === 0) e.headers = { 'h-index': `${i}`, 'h-kind': 'compat' }
    e.partition = partitioner({ topic, partitionMetadata, message: { key: e.key, value: e.value } })
    expected.push(e)
  }
  const sent = new Map()
  for (let b = 0; b < 3; b++) {
    const batch = expected.slice(b * 100, (b + 1) * 100)
    const res = await producer.send({
      topic,
      acks: -1,
      messages: batch.map(e => ({ key: e.key, value: e.value, headers: e.headers })),
    })
    for (const r of res) {
      eq(r.errorCode, 0, `send ${b}: errorCode of partition ${r.partition}`)
      eq(Number(r.baseOffset), sent.get(r.partition) || 0, `send ${b}: baseOffset of partition ${r.partition}`)
    }
    for (const e of batch) sent.set(e.partition, (sent.get(e.partition) || 0) + 1)
    const parts = new Set(batch.map(e => e.partition))
    eq(res.map(r => r.partition).sort(), [...parts].sort(), `send ${b}: partitions in the produce response`)
  }
  log(`produced 300 records, per partition ${JSON.stringify(Object.fromEntries(sent))}`)
  const offs = await admin.fetchTopicOffsets(topic)
  for (const o of offs) {
    eq([o.low, o.high], ['0', String(sent.get(o.partition) || 0)], `watermarks of partition ${o.partition}`)
  }
  const got = await consumeAll(topic, 300)
  checkExactlyOnce(got, expected, 'fresh consumer')
  log('consumed 300 records: every key/value/header exactly once, partitions and offsets as produced')
}

// compression-<codec>: 100 records in 2 compressed sends (2 batches) to one partition;
// consume and check exact keys, values, offsets 0..99.
async function scenarioCompression(codec) {
  const { CompressionTypes } = kafkajs
  const type = { gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4 }[codec]
  check(type !== undefined, `unknown codec ${codec}`)
  registerCodecs()
  const admin = await connected(kafka.admin())
  const topic = uniq(`comp-${codec}`)
  await createTopic(admin, topic, 1)
  const producer = await connected(kafka.producer())
  const expected = []
  for (let i = 0; i < 100; i++) {
    // compressible, varied values
    expected.push({ key: `k${i}`, value: `v${i}-` + 'abcdefgh'.repeat(1 + (i % 20)), partition: 0 })
  }
  for (let b = 0; b < 2; b++) {
    const res = await producer.send({
      topic,
      acks: -1,
      compression: type,
      messages: expected.slice(b * 50, b * 50 + 50).map(e => ({ key: e.key, value: e.value, partition: 0 })),
    })
    eq(res.map(r => [r.partition, r.errorCode, Number(r.baseOffset)]), [[0, 0, b * 50]], `send ${b} result`)
  }
  log(`produced 100 ${codec}-compressed records in 2 batches`)
  const got = await consumeAll(topic, 100)
  checkExactlyOnce(got, expected, `${codec} consumer`)
  log(`consumed 100 records, exact keys/values/offsets 0..99`)
}

// group-classic: 2 consumers in one group on a 4-partition topic; 200 records produced after
// both joined; each record consumed exactly once between them; both commit; admin.fetchOffsets
// per partition equals what was consumed (sum 200); one consumer leaves -> the other gets all
// 4 partitions, re-consumes nothing, and gets exactly the 20 records produced after that.
async function scenarioGroupClassic() {
  const admin = await connected(kafka.admin())
  const topic = uniq('grp')
  const groupId = uniq('g-classic')
  await createTopic(admin, topic, 4)
  const members = {}
  for (const name of ['A', 'B']) {
    const consumer = kafka.consumer({
      groupId,
      heartbeatInterval: 500,
      sessionTimeout: 10000,
      rebalanceTimeout: 15000,
      maxWaitTimeInMs: 200,
    })
    const m = { name, consumer, got: [], assignment: null, generation: null, joins: 0 }
    consumer.on(consumer.events.GROUP_JOIN, e => {
      m.assignment = (e.payload.memberAssignment[topic] || []).slice().sort()
      m.generation = e.payload.groupId && e.payload.memberId ? e.payload : null
      m.joins++
    })
    await connected(consumer)
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        m.got.push({ partition, offset: Number(message.offset), key: message.key.toString(), value: message.value.toString(), headers: {} })
      },
    })
    members[name] = m
  }
  const { A, B } = members
  await waitFor(
    () => A.assignment && B.assignment && A.assignment.length + B.assignment.length === 4 && A.assignment.length === 2,
    45000,
    `both members to hold 2 partitions (A=${JSON.stringify(A.assignment)} B=${JSON.stringify(B.assignment)})`
  )
  eq([...A.assignment, ...B.assignment].sort(), [0, 1, 2, 3], 'union of the assignments')
  log(`group ${groupId} stable: A=${JSON.stringify(A.assignment)} B=${JSON.stringify(B.assignment)}`)

  const producer = await connected(kafka.producer())
  const expected = []
  for (let i = 0; i < 200; i++) expected.push({ key: `k${i}`, value: `v${i}`, partition: i % 4 })
  await producer.send({ topic, acks: -1, messages: expected.map(e => ({ ...e })) })
  await waitFor(() => A.got.length + B.got.length >= 200, 60000, `200 records (A ${A.got.length}, B ${B.got.length})`)
  await sleep(1500)
  const all = [...A.got, ...B.got]
  checkExactlyOnce(all, expected, 'group A+B')
  for (const m of [A, B]) {
    const parts = [...new Set(m.got.map(r => r.partition))].sort()
    eq(parts, m.assignment, `partitions consumed by ${m.name}`)
  }
  log(`consumed 200 exactly once: A ${A.got.length}, B ${B.got.length}`)

  for (const m of [A, B]) {
    const next = p => String(Math.max(...m.got.filter(r => r.partition === p).map(r => r.offset)) + 1)
    await m.consumer.commitOffsets(m.assignment.map(p => ({ topic, partition: p, offset: next(p) })))
  }
  const fetched = await admin.fetchOffsets({ groupId, topics: [topic] })
  const committed = fetched[0].partitions.map(p => [p.partition, Number(p.offset)]).sort((a, b) => a[0] - b[0])
  eq(committed, [[0, 50], [1, 50], [2, 50], [3, 50]], 'admin.fetchOffsets after commit')
  eq(committed.reduce((s, [, o]) => s + o, 0), 200, 'sum of committed offsets')
  log('committed offsets via admin.fetchOffsets: 50 on each of 4 partitions, sum 200')

  const joinsBefore = A.joins
  await B.consumer.disconnect()
  await waitFor(() => A.joins > joinsBefore && A.assignment.length === 4, 45000,
    `rebalance giving A all 4 partitions (A=${JSON.stringify(A.assignment)})`)
  eq(A.assignment, [0, 1, 2, 3], 'assignment of A after B left')
  log('B left; A now owns partitions [0,1,2,3]')
  const before = A.got.length
  const more = []
  for (let i = 200; i < 220; i++) more.push({ key: `k${i}`, value: `v${i}`, partition: i % 4 })
  await producer.send({ topic, acks: -1, messages: more.map(e => ({ ...e })) })
  await waitFor(() => A.got.length - before >= 20, 30000, `20 new records on A (got ${A.got.length - before})`)
  await sleep(1500)
  const after = A.got.slice(before)
  eq(after.length, 20, 'records consumed by A after the rebalance (nothing re-consumed)')
  eq(after.map(r => r.key).sort(), more.map(e => e.key).sort(), 'keys consumed by A after the rebalance')
  for (const r of after) eq(r.offset, 50 + Math.floor((Number(r.key.slice(1)) - 200) / 4), `offset of ${r.key}`)
  log('A consumed exactly the 20 new records at offsets 50..54 of each partition')
}

// A failed check inside soft() is reported at the end; the scenario goes on meanwhile.
const softFailures = []
async function soft(fn) {
  try {
    await fn()
  } catch (e) {
    if (!(e instanceof CheckError)) throw e
    log(`FAILED CHECK (continuing): ${e.message}`)
    softFailures.push(e.message)
  }
}

// admin: every kafkajs admin call a single node can serve, with exact checks.
async function scenarioAdmin() {
  const { ConfigResourceTypes } = kafkajs
  const admin = await connected(kafka.admin())
  const t1 = uniq('adm-a')
  const t2 = uniq('adm-b')
  const ok = msg => log(`ok  ${msg}`)

  await createTopic(admin, t1, 3, [
    { name: 'retention.ms', value: '3600000' },
    { name: 'cleanup.policy', value: 'delete' },
  ])
  await createTopic(admin, t2, 1)
  eq(
    await admin.createTopics({ topics: [{ topic: t2, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: false }),
    false,
    'createTopics of an existing topic'
  )
  ok('createTopics (with configs; existing topic -> false)')

  const listed = (await admin.listTopics()).filter(t => !t.startsWith('__')).sort()
  eq(listed, [t1, t2].sort(), 'listTopics (non-internal)')
  ok('listTopics')

  const md = await admin.fetchTopicMetadata({ topics: [t1, t2] })
  const shape = md.topics
    .map(t => [t.name, t.partitions.map(p => [p.partitionId, p.partitionErrorCode, p.leader, p.replicas, p.isr]).sort((a, b) => a[0] - b[0])])
    .sort()
  eq(shape, [
    [t1, [[0, 0, 0, [0], [0]], [1, 0, 0, [0], [0]], [2, 0, 0, [0], [0]]]],
    [t2, [[0, 0, 0, [0], [0]]]],
  ].sort(), 'fetchTopicMetadata')
  ok('fetchTopicMetadata')

  const cluster = await admin.describeCluster()
  const [host, port] = args.bootstrap.split(':')
  eq(cluster.brokers.map(b => [b.nodeId, b.host, b.port]), [[0, host, Number(port)]], 'describeCluster brokers')
  eq(cluster.controller, 0, 'describeCluster controller')
  check(typeof cluster.clusterId === 'string' && cluster.clusterId.length > 0, `describeCluster clusterId: ${cluster.clusterId}`)
  ok(`describeCluster (clusterId ${cluster.clusterId})`)

  const describe = async (topic, names) => {
    const r = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: names }],
      includeSynonyms: false,
    })
    eq(r.resources.length, 1, 'describeConfigs resources')
    eq([r.resources[0].errorCode, r.resources[0].resourceName], [0, topic], 'describeConfigs resource')
    return Object.fromEntries(r.resources[0].configEntries.map(e => [e.configName, e.configValue]))
  }
  eq(await describe(t1, ['retention.ms', 'cleanup.policy']), { 'retention.ms': '3600000', 'cleanup.policy': 'delete' },
    'describeConfigs of created topic')
  ok('describeConfigs (topic)')

  const brokerCfg = await admin.describeConfigs({
    resources: [{ type: ConfigResourceTypes.BROKER, name: '0' }],
    includeSynonyms: false,
  })
  eq([brokerCfg.resources.length, brokerCfg.resources[0].errorCode, brokerCfg.resources[0].resourceName], [1, 0, '0'],
    'describeConfigs of broker 0')
  ok(`describeConfigs (broker 0: ${brokerCfg.resources[0].configEntries.length} entries)`)

  await admin.createPartitions({ topicPartitions: [{ topic: t2, count: 4 }] }) // resolves to undefined on success
  const md2 = await admin.fetchTopicMetadata({ topics: [t2] })
  eq(md2.topics[0].partitions.map(p => p.partitionId).sort(), [0, 1, 2, 3], 'partitions after createPartitions')
  ok('createPartitions 1 -> 4')

  // records with explicit timestamps for ListOffsets by timestamp: 10 records on t1 partition 0
  // with timestamps base+0s..base+9s, 5 records on partition 1 with base+0s..base+4s
  const base = Date.now() - 3600 * 1000
  const producer = await connected(kafka.producer())
  const msgs = []
  for (let i = 0; i < 10; i++) msgs.push({ partition: 0, key: `k${i}`, value: `v${i}`, timestamp: String(base + i * 1000) })
  for (let i = 0; i < 5; i++) msgs.push({ partition: 1, key: `j${i}`, value: `w${i}`, timestamp: String(base + i * 1000) })
  await producer.send({ topic: t1, acks: -1, messages: msgs })
  const tOffsets = (await admin.fetchTopicOffsets(t1)).map(o => [o.partition, o.low, o.high, o.offset]).sort()
  eq(tOffsets, [[0, '0', '10', '10'], [1, '0', '5', '5'], [2, '0', '0', '0']], 'fetchTopicOffsets (partition, low, high, offset)')
  ok('fetchTopicOffsets (earliest/latest)')
  const byTs = async ts => (await admin.fetchTopicOffsetsByTimestamp(t1, ts)).map(o => [o.partition, o.offset]).sort()
  // Kafka answers the offset of the first *record* with timestamp >= the target, also inside a
  // batch; for a partition without one, -1, which kafkajs replaces by the high watermark.
  await soft(async () => {
    eq(await byTs(base - 1000), [[0, '0'], [1, '0'], [2, '0']], 'fetchTopicOffsetsByTimestamp(before all)')
    eq(await byTs(base + 3500), [[0, '4'], [1, '4'], [2, '0']], 'fetchTopicOffsetsByTimestamp(base+3.5s)')
    eq(await byTs(base + 7000), [[0, '7'], [1, '5'], [2, '0']], 'fetchTopicOffsetsByTimestamp(base+7s)')
    ok('fetchTopicOffsetsByTimestamp')
  })

  // a consumer group: consume t1 partition 0..1 fully, commit, leave
  const groupId = uniq('adm-g')
  const consumer = kafka.consumer({ groupId, heartbeatInterval: 1000, sessionTimeout: 10000, rebalanceTimeout: 10000, maxWaitTimeInMs: 200 })
  await connected(consumer)
  await consumer.subscribe({ topic: t1, fromBeginning: true })
  let n = 0
  await consumer.run({ autoCommit: true, autoCommitThreshold: 1, eachMessage: async () => { n++ } })
  await waitFor(() => n >= 15, 30000, `15 records consumed by ${groupId} (got ${n})`)
  await sleep(500)
  await consumer.commitOffsets([{ topic: t1, partition: 0, offset: '10' }, { topic: t1, partition: 1, offset: '5' }])
  const live = await admin.describeGroups([groupId])
  eq(live.groups.map(g => [g.groupId, g.errorCode, g.state, g.protocolType, g.protocol, g.members.length]),
    [[groupId, 0, 'Stable', 'consumer', 'RoundRobinAssigner', 1]], 'describeGroups of the live group')
  await consumer.disconnect()
  eq(n, 15, 'records consumed by the admin test group')

  const groups = (await admin.listGroups()).groups.filter(g => g.groupId === groupId)
  eq(groups, [{ groupId, protocolType: 'consumer' }], 'listGroups')
  ok('listGroups')
  const desc = await admin.describeGroups([groupId])
  eq(desc.groups.map(g => [g.groupId, g.errorCode, g.state, g.protocolType, g.members.length]),
    [[groupId, 0, 'Empty', 'consumer', 0]], 'describeGroups after the member left')
  ok('describeGroups (Stable with 1 member, then Empty)')

  const offsetsOf = async () =>
    (await admin.fetchOffsets({ groupId, topics: [t1] }))[0].partitions.map(p => [p.partition, p.offset]).sort()
  eq(await offsetsOf(), [[0, '10'], [1, '5'], [2, '-1']], 'fetchOffsets after commit')
  ok('fetchOffsets')
  await admin.setOffsets({ groupId, topic: t1, partitions: [{ partition: 0, offset: '3' }] })
  eq(await offsetsOf(), [[0, '3'], [1, '5'], [2, '-1']], 'fetchOffsets after setOffsets(p0=3)')
  ok('setOffsets')
  // kafkajs commits the logical offsets -2 (earliest) / -1 (latest) as they are; Kafka stores
  // and returns them unchanged (kafkajs's own resetOffsets tests expect '-2' and '-1').
  await admin.resetOffsets({ groupId, topic: t1, earliest: true })
  eq(await offsetsOf(), [[0, '-2'], [1, '-2'], [2, '-2']], 'fetchOffsets after resetOffsets(earliest)')
  await admin.resetOffsets({ groupId, topic: t1, earliest: false })
  eq(await offsetsOf(), [[0, '-1'], [1, '-1'], [2, '-1']], 'fetchOffsets after resetOffsets(latest)')
  ok('resetOffsets (earliest, latest)')

  const del = await admin.deleteGroups([groupId])
  eq(del.map(d => [d.groupId, d.errorCode]), [[groupId, 0]], 'deleteGroups result')
  eq((await admin.listGroups()).groups.filter(g => g.groupId === groupId), [], 'listGroups after deleteGroups')
  ok('deleteGroups')

  await admin.deleteTopics({ topics: [t1, t2], timeout: 10000 })
  const left = (await admin.listTopics()).filter(t => t === t1 || t === t2)
  eq(left, [], 'listTopics after deleteTopics')
  ok('deleteTopics')
  if (softFailures.length) throw new CheckError(softFailures.join('; '))
}

// admin-alter-configs: admin.alterConfigs (AlterConfigs v0/v1, kafkajs has no incremental
// variant) on a topic, then describeConfigs shows the new value.
async function scenarioAlterConfigs(interim) {
  const { ConfigResourceTypes } = kafkajs
  const admin = await connected(kafka.admin())
  const topic = uniq('adm-cfg')
  await createTopic(admin, topic, 1, [{ name: 'retention.ms', value: '3600000' }])
  const start = Date.now()
  let res
  try {
    res = await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '7200000' }] }],
    })
  } catch (e) {
    if (!interim) throw e
    log(`alterConfigs failed after ${Date.now() - start} ms: ${e.name} ${e.type || ''} ${e.message}`)
    check(Date.now() - start < 15000, 'alterConfigs should fail fast')
    eq([e.name, e.retriable], ['KafkaJSServerDoesNotSupportApiKey', false], 'alterConfigs error (name, retriable)')
    return
  }
  eq(res.resources.map(r => [r.errorCode, r.resourceName]), [[0, topic]], 'alterConfigs result')
  const r = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }] })
  eq(r.resources[0].configEntries.map(e => [e.configName, e.configValue]), [['retention.ms', '7200000']], 'describeConfigs after alterConfigs')
  check(!interim, 'alterConfigs succeeded: issue 10 seems to have landed, mark the cell "pass"')
  log('alterConfigs retention.ms=7200000 took effect')
}

// admin-delete-records: deleteTopicRecords up to offset 4 of partition 0 (10 records), then
// the low watermark is 4 and a fresh consumer reads offsets 4..9 only.
async function scenarioDeleteRecords(interim) {
  const admin = await connected(kafka.admin())
  const topic = uniq('adm-del')
  await createTopic(admin, topic, 1)
  const producer = await connected(kafka.producer())
  const expected = []
  for (let i = 0; i < 10; i++) expected.push({ key: `k${i}`, value: `v${i}`, partition: 0 })
  await producer.send({ topic, acks: -1, messages: expected.map(e => ({ ...e })) })
  // kafkajs looks the partition leaders up in its metadata cache before it sends DeleteRecords:
  // load the topic's metadata first (else: KafkaJSBrokerNotFound, whatever the broker).
  eq((await admin.fetchTopicOffsets(topic)).map(o => [o.partition, o.low, o.high]), [[0, '0', '10']], 'watermarks before')
  const start = Date.now()
  try {
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
  } catch (e) {
    if (!interim) throw e
    const errs = (e.partitions || []).map(p => `p${p.partition}: ${p.error && (p.error.type || p.error.name)}: ${p.error && p.error.message}`).join(', ')
    log(`deleteTopicRecords failed after ${Date.now() - start} ms: ${e.name}: ${e.message} [${errs}]` + (e.originalError ? ` cause ${e.originalError.name}: ${e.originalError.message}` : ''))
    check(Date.now() - start < 15000, 'deleteTopicRecords should fail fast')
    eq([e.name, e.message], ['KafkaJSNonRetriableError', 'The Kafka server does not support the requested API version'],
      'deleteTopicRecords error (name, message)')
    return
  }
  const offs = (await admin.fetchTopicOffsets(topic)).map(o => [o.partition, o.low, o.high])
  eq(offs, [[0, '4', '10']], 'watermarks after deleteTopicRecords')
  const got = await consumeAll(topic, 6)
  eq(got.map(r => [r.offset, r.key]), expected.slice(4).map((e, i) => [4 + i, e.key]), 'records left after deleteTopicRecords')
  check(!interim, 'deleteTopicRecords succeeded: issue 10 seems to have landed, mark the cell "pass"')
  log('deleteTopicRecords moved the low watermark to 4; offsets 4..9 remain')
}

// transactions: transactional producer; commit one transaction of 10 records and abort one of
// 5; a read_committed consumer sees exactly the 10 committed ones.
// Interim (issue 12): producer.transaction() fails within 15 s with the non-retriable
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED protocol error.
async function scenarioTransactions(interim) {
  const admin = await connected(kafka.admin())
  const topic = uniq('txn')
  await createTopic(admin, topic, 1)
  const producer = kafka.producer({ transactionalId: uniq('tx'), idempotent: true, maxInFlightRequests: 1 })
  const start = Date.now()
  let txn
  try {
    await withTimeout(producer.connect(), 20000, 'transactional producer connect')
    cleanups.push(() => producer.disconnect())
    txn = await withTimeout(producer.transaction(), 20000, 'producer.transaction()')
  } catch (e) {
    const took = Date.now() - start
    const root = e.originalError || e.cause || e
    log(`producer.transaction() failed after ${took} ms: ${e.name}: ${e.message}` +
      (root !== e ? ` (cause ${root.name} ${root.type}: ${root.message})` : ''))
    if (!interim) throw e
    check(took < 15000, `transaction() should fail within 15 s, took ${took} ms`)
    check(e.retriable === false, `error should be non-retriable (${e.name} retriable=${e.retriable})`)
    eq(e.type || root.type, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', 'error type')
    return
  }
  check(!interim, 'producer.transaction() succeeded: issue 12 seems to have landed, mark the cell "pass"')
  await txn.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ key: `c${i}`, value: `committed${i}` })) })
  await txn.commit()
  const txn2 = await producer.transaction()
  await txn2.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ key: `a${i}`, value: `aborted${i}` })) })
  await txn2.abort()
  const consumer = kafka.consumer({ groupId: uniq('g-txn'), readUncommitted: false, maxWaitTimeInMs: 200 })
  await connected(consumer)
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await consumer.run({ eachMessage: async ({ message }) => { got.push([message.key.toString(), message.value.toString()]) } })
  await waitFor(() => got.length >= 10, 30000, `10 committed records (got ${got.length})`)
  await sleep(2000)
  eq(got, Array.from({ length: 10 }, (_, i) => [`c${i}`, `committed${i}`]), 'read_committed records')
  log('committed transaction visible (10 records), aborted one invisible')
}

// ---------------------------------------------------------------------------------------
const SCENARIOS = {
  'produce-consume': () => scenarioProduceConsume(),
  'compression-gzip': () => scenarioCompression('gzip'),
  'compression-snappy': () => scenarioCompression('snappy'),
  'compression-lz4': () => scenarioCompression('lz4'),
  'group-classic': () => scenarioGroupClassic(),
  admin: () => scenarioAdmin(),
  'admin-alter-configs': interim => scenarioAlterConfigs(interim),
  'admin-delete-records': interim => scenarioDeleteRecords(interim),
  transactions: interim => scenarioTransactions(interim),
}

let args
async function main() {
  try {
    args = parseArgs(process.argv.slice(2))
  } catch (e) {
    console.log(`usage: run --bootstrap HOST:PORT --client kafkajs --version V --scenario S\nerror: ${e.message}`)
    return 2
  }
  const matrix = JSON.parse(fs.readFileSync(path.join(HERE, 'matrix.json'), 'utf8'))
  const cell = matrix.find(c => c.client === args.client && c.version === args.version && c.scenario === args.scenario)
  if (!cell) {
    console.log(`FAIL: no cell ${args.client} ${args.version} ${args.scenario} in matrix.json`)
    return 2
  }
  const installed = req('kafkajs/package.json').version
  if (args.client !== 'kafkajs' || installed !== args.version) {
    console.log(`FAIL: this runner has kafkajs ${installed} installed, asked for ${args.client} ${args.version} (run setup)`)
    return 2
  }
  kafkajs = req('kafkajs')
  kafka = makeKafka(args.bootstrap)
  const interim = cell.expect === 'not-yet'
  log(`kafkajs ${installed}, scenario ${args.scenario}, expect ${cell.expect}` +
    (interim ? ` (issue ${cell.issue}; interim: ${cell.interim})` : '') + `, bootstrap ${args.bootstrap}`)
  let rc = 0
  try {
    await SCENARIOS[args.scenario](interim)
    log(interim ? 'PASS (interim behaviour holds)' : 'PASS')
  } catch (e) {
    rc = 1
    const detail = e instanceof CheckError ? e.message : `${e.name}${e.type ? ` [${e.type}]` : ''}: ${e.message}` +
      (e.originalError ? ` (cause: ${e.originalError.name}: ${e.originalError.message})` : '') + `\n${e.stack}`
    console.log(`FAIL: ${detail}`)
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await withTimeout(Promise.resolve().then(c), 5000, 'disconnect')
      } catch (_) { /* ignore */ }
    }
  }
  return rc
}

// Hard stop: the runner must finish by itself whatever a client call does.
const hardTimer = setTimeout(() => {
  console.log('FAIL: runner hard timeout (110 s)')
  process.exit(1)
}, Number(process.env.COMPAT_HARD_TIMEOUT_MS || 110000))
hardTimer.unref()

main().then(rc => process.exit(rc), e => {
  console.log(`FAIL: ${e.stack}`)
  process.exit(1)
})
