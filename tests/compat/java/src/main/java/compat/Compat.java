package compat;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.SECONDS;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreatePartitionsResult;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * One compatibility cell per run: {@code Compat --bootstrap H:P --scenario S --version V
 * --expect pass|not-yet}. Prints an account to stdout, "PASS" last and exits 0, or the
 * reason last ("FAIL: ...") and exits 1. A watchdog ends the JVM (exit 3) when the
 * scenario overruns its own deadline, so a run never outlives the driver's timeout.
 */
public final class Compat {
    static final long T0 = System.nanoTime();
    static String bootstrap;
    static String scenario;
    static String version;
    static boolean expectPass = true;
    static int deadlineS = 100;
    /** Unique suffix for topic and group names. */
    static final String UNIQ = UUID.randomUUID().toString().substring(0, 8);

    public static void main(String[] args) {
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--bootstrap" -> bootstrap = args[i + 1];
                case "--scenario" -> scenario = args[i + 1];
                case "--version" -> version = args[i + 1];
                case "--expect" -> expectPass = args[i + 1].equals("pass");
                case "--deadline-s" -> deadlineS = Integer.parseInt(args[i + 1]);
                default -> {
                    System.out.println("FAIL: unknown argument " + args[i]);
                    System.exit(2);
                }
            }
        }
        if (bootstrap == null || scenario == null) {
            System.out.println("FAIL: usage: --bootstrap H:P --scenario S [--version V] [--expect pass|not-yet]");
            System.exit(2);
        }
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(deadlineS * 1000L);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("FAIL: scenario " + scenario + " did not finish within its own deadline of "
                    + deadlineS + " s (hung client call?)");
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "compat-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        log("kafka-clients %s (jar says %s), scenario %s, expect %s, bootstrap %s", version,
                clientJarVersion(), scenario,
                expectPass ? "pass" : "not-yet", bootstrap);
        int rc;
        try {
            runScenario();
            System.out.printf("PASS (%.1f s)%n", secs());
            rc = 0;
        } catch (Throwable t) {
            System.out.printf("FAIL (%.1f s): %s%n", secs(), describe(t));
            rc = 1;
        }
        System.out.flush();
        Runtime.getRuntime().halt(rc);
    }

    static void runScenario() throws Exception {
        if (scenario.startsWith("compression-")) {
            compression(scenario.substring("compression-".length()));
            return;
        }
        if (scenario.startsWith("streams-") || scenario.startsWith("group-consumer-")) {
            // V4*.java are compiled for the 4.x line only; loaded by name so that the 3.x
            // build needs neither Kafka Streams nor SubscriptionPattern.
            String cls = scenario.startsWith("streams-") ? "compat.V4Streams" : "compat.V4Regex";
            try {
                Class.forName(cls).getMethod("run", String.class).invoke(null, scenario);
            } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause() instanceof Exception ex ? ex : e;
            }
            return;
        }
        switch (scenario) {
            case "produce-consume" -> produceConsume();
            case "group-classic" -> groups("classic");
            case "group-consumer" -> groups("consumer");
            case "admin" -> adminScenario();
            case "admin-alter-configs" -> adminAlterConfigs();
            case "admin-log-dirs" -> adminLogDirs();
            case "transactions" -> transactions();
            default -> throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }

    // ---------------------------------------------------------------- helpers

    static String clientJarVersion() {
        try (java.io.InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version");
        } catch (Exception e) {
            return "?";
        }
    }

    static double secs() {
        return (System.nanoTime() - T0) / 1e9;
    }

    static void log(String fmt, Object... args) {
        System.out.printf("[%5.1fs] %s%n", secs(), String.format(Locale.ROOT, fmt, args));
        System.out.flush();
    }

    static final class CheckFailed extends RuntimeException {
        CheckFailed(String msg) {
            super(msg);
        }
    }

    static void check(boolean ok, String fmt, Object... args) {
        if (!ok) throw new CheckFailed(String.format(Locale.ROOT, fmt, args));
    }

    static void eq(Object expected, Object got, String what) {
        if (!Objects.equals(expected, got)) {
            throw new CheckFailed(what + ": expected " + expected + ", got " + got);
        }
    }

    /** The exception chain as "Outer: msg <- Cause: msg". */
    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        Set<Throwable> seen = new HashSet<>();
        for (Throwable c = t; c != null && seen.add(c); c = c.getCause()) {
            if (sb.length() > 0) sb.append(" <- caused by ");
            if (c instanceof CheckFailed) sb.append(c.getMessage());
            else sb.append(c.getClass().getName()).append(": ").append(c.getMessage());
        }
        return sb.toString();
    }

    static boolean hasCause(Throwable t, Class<? extends Throwable> k) {
        Set<Throwable> seen = new HashSet<>();
        for (Throwable c = t; c != null && seen.add(c); c = c.getCause()) {
            if (k.isInstance(c)) return true;
        }
        return false;
    }

    /** Runs {@code call}, which must fail with {@code k} somewhere in its cause chain. */
    static Throwable expectFailure(String what, Class<? extends Throwable> k, Callable<?> call) {
        Object got;
        try {
            got = call.call();
        } catch (Throwable t) {
            check(hasCause(t, k), "%s: expected %s, got %s", what, k.getSimpleName(), describe(t));
            return t;
        }
        throw new CheckFailed(what + ": expected " + k.getSimpleName() + ", but it succeeded with " + got);
    }

    static Properties base() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "compat-" + scenario);
        return p;
    }

    static Admin admin() {
        Properties p = base();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(p);
    }

    static KafkaProducer<String, String> producer(Map<String, String> extra) {
        Properties p = base();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(Map<String, String> extra) {
        Properties p = base();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static void createTopic(Admin admin, String name, int partitions, Map<String, String> configs)
            throws Exception {
        NewTopic t = new NewTopic(name, partitions, (short) 1).configs(configs);
        admin.createTopics(List.of(t)).all().get(30, SECONDS);
        log("created topic %s (%d partitions%s)", name, partitions, configs.isEmpty() ? "" : ", " + configs);
    }

    static void createTopic(String name, int partitions) throws Exception {
        try (Admin admin = admin()) {
            createTopic(admin, name, partitions, Map.of());
        }
    }

    /** Sends records and returns their metadata, in send order. */
    static List<RecordMetadata> sendAll(KafkaProducer<String, String> p, List<ProducerRecord<String, String>> recs)
            throws Exception {
        List<Future<RecordMetadata>> fs = new ArrayList<>();
        for (ProducerRecord<String, String> r : recs) fs.add(p.send(r));
        p.flush();
        List<RecordMetadata> out = new ArrayList<>();
        for (Future<RecordMetadata> f : fs) out.add(f.get(30, SECONDS));
        return out;
    }

    static Map<TopicPartition, Long> endOffsetsOf(String topic, List<RecordMetadata> mds) {
        Map<TopicPartition, Long> end = new HashMap<>();
        for (RecordMetadata md : mds) {
            end.merge(new TopicPartition(topic, md.partition()), md.offset() + 1, Math::max);
        }
        return end;
    }

    static Set<TopicPartition> partitions(String topic, int n) {
        Set<TopicPartition> s = new HashSet<>();
        for (int i = 0; i < n; i++) s.add(new TopicPartition(topic, i));
        return s;
    }

    static String tps(Collection<TopicPartition> c) {
        return c.stream().map(TopicPartition::toString).sorted().collect(Collectors.joining(",", "[", "]"));
    }

    // ---------------------------------------------------------------- produce-consume

    static void produceConsume() throws Exception {
        String topic = "pc-" + UNIQ;
        int n = 300;
        createTopic(topic, 3);
        List<ProducerRecord<String, String>> recs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            RecordHeaders h = new RecordHeaders();
            if (i % 3 == 0) h.add("idx", ("h" + i).getBytes(UTF_8));
            recs.add(new ProducerRecord<>(topic, null, null, "k" + i, "v" + i, h));
        }
        List<RecordMetadata> mds;
        try (KafkaProducer<String, String> p = producer(Map.of())) {
            mds = sendAll(p, recs);
        }
        long[] next = new long[3];
        for (int i = 0; i < n; i++) {
            RecordMetadata md = mds.get(i);
            int want = Utils.toPositive(Utils.murmur2(("k" + i).getBytes(UTF_8))) % 3;
            eq(want, md.partition(), "partition of k" + i + " (default partitioner)");
            eq(next[md.partition()]++, md.offset(), "offset acked for k" + i);
        }
        log("produced %d records with acks=all (100 with a header); per partition %d/%d/%d, offsets 0.. in send order",
                n, next[0], next[1], next[2]);

        Map<String, ConsumerRecord<String, String>> got = new HashMap<>();
        long[] expectNext = new long[3];
        try (KafkaConsumer<String, String> c = consumer(Map.of())) {
            c.assign(partitions(topic, 3));
            c.seekToBeginning(partitions(topic, 3));
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    check(got.put(r.key(), r) == null, "record %s delivered twice", r.key());
                    eq(expectNext[r.partition()]++, r.offset(), "offset order in partition " + r.partition());
                }
            }
            check(got.size() == n, "consumed %d of %d records within 30 s", got.size(), n);
            int extra = c.poll(Duration.ofMillis(500)).count();
            eq(0, extra, "records after the 300th");
        }
        for (int i = 0; i < n; i++) {
            ConsumerRecord<String, String> r = got.get("k" + i);
            check(r != null, "k%d missing", i);
            eq("v" + i, r.value(), "value of k" + i);
            eq(mds.get(i).partition(), r.partition(), "partition of k" + i);
            eq(mds.get(i).offset(), r.offset(), "offset of k" + i);
            Header[] hs = r.headers().toArray();
            if (i % 3 == 0) {
                eq(1, hs.length, "header count of k" + i);
                eq("idx", hs[0].key(), "header key of k" + i);
                eq("h" + i, new String(hs[0].value(), UTF_8), "header value of k" + i);
            } else {
                eq(0, hs.length, "header count of k" + i);
            }
        }
        log("consumed all %d exactly once from the beginning (assign, no group): keys, values, headers, "
                + "partitions and offsets as produced, per-partition order kept", n);
    }

    // ---------------------------------------------------------------- compression

    static void compression(String codec) throws Exception {
        String topic = "comp-" + codec + "-" + UNIQ;
        int n = 100;
        createTopic(topic, 1);
        String pad = "abcdefghij".repeat(20);
        List<ProducerRecord<String, String>> recs = new ArrayList<>();
        for (int i = 0; i < n; i++) recs.add(new ProducerRecord<>(topic, 0, "k" + i, "v" + i + "-" + pad));
        List<RecordMetadata> mds;
        try (KafkaProducer<String, String> p = producer(Map.of(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.LINGER_MS_CONFIG, "50",
                ProducerConfig.BATCH_SIZE_CONFIG, "65536"))) {
            mds = sendAll(p, recs);
        }
        for (int i = 0; i < n; i++) eq((long) i, mds.get(i).offset(), "offset acked for k" + i);
        log("produced %d records with compression.type=%s, offsets 0..%d", n, codec, n - 1);
        int count = 0;
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = consumer(Map.of())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30_000;
            while (count < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    check(count < n, "more than %d records", n);
                    eq((long) count, r.offset(), "offset of record " + count);
                    eq("k" + count, r.key(), "key at offset " + count);
                    eq("v" + count + "-" + pad, r.value(), "value at offset " + count);
                    count++;
                }
            }
            check(count == n, "consumed %d of %d records within 30 s", count, n);
            eq(0, c.poll(Duration.ofMillis(500)).count(), "records after the 100th");
        }
        log("consumed all %d (%s) with exact keys, values and offsets", n, codec);
    }

    // ---------------------------------------------------------------- groups

    static void groups(String protocol) throws Exception {
        String topic = "grp-" + protocol + "-" + UNIQ;
        String group = "g-" + protocol + "-" + UNIQ;
        int n = 200;
        createTopic(topic, 4);
        Map<String, String> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cfg.put("group.protocol", protocol);
        if (protocol.equals("classic")) {
            cfg.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
            cfg.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        }
        Map<String, String> cfg1 = new HashMap<>(cfg);
        cfg1.put("client.id", "compat-" + scenario + "-c1");
        Map<String, String> cfg2 = new HashMap<>(cfg);
        cfg2.put("client.id", "compat-" + scenario + "-c2");
        KafkaConsumer<String, String> c1 = consumer(cfg1);
        KafkaConsumer<String, String> c2 = consumer(cfg2);
        try {
            c1.subscribe(List.of(topic));
            c2.subscribe(List.of(topic));
            Map<String, String> owner = new HashMap<>();
            long deadline = System.currentTimeMillis() + 45_000;
            while (true) {
                pollInto(c1, "c1", owner);
                pollInto(c2, "c2", owner);
                Set<TopicPartition> a1 = c1.assignment(), a2 = c2.assignment();
                Set<TopicPartition> union = new HashSet<>(a1);
                union.addAll(a2);
                if (a1.size() + a2.size() == 4 && union.size() == 4 && !a1.isEmpty() && !a2.isEmpty()) break;
                check(System.currentTimeMillis() < deadline,
                        "group %s (%s) did not assign 4 partitions over two members within 45 s: c1=%s c2=%s",
                        group, protocol, tps(a1), tps(a2));
            }
            log("group.protocol=%s: both members assigned: c1=%s c2=%s", protocol, tps(c1.assignment()),
                    tps(c2.assignment()));
            eq(2, c1.assignment().size(), "partitions of c1");
            eq(2, c2.assignment().size(), "partitions of c2");
            eq(0, owner.size(), "records before any was produced");

            List<ProducerRecord<String, String>> recs = new ArrayList<>();
            for (int i = 0; i < n; i++) recs.add(new ProducerRecord<>(topic, "k" + i, "v" + i));
            List<RecordMetadata> mds;
            try (KafkaProducer<String, String> p = producer(Map.of())) {
                mds = sendAll(p, recs);
            }
            Map<TopicPartition, Long> end = endOffsetsOf(topic, mds);
            log("produced %d records: per partition %s", n, new TreeMap<>(end.entrySet().stream()
                    .collect(Collectors.toMap(e -> e.getKey().toString(), Map.Entry::getValue))));

            deadline = System.currentTimeMillis() + 30_000;
            while (owner.size() < n) {
                check(System.currentTimeMillis() < deadline, "consumed %d of %d within 30 s", owner.size(), n);
                pollInto(c1, "c1", owner);
                pollInto(c2, "c2", owner);
            }
            pollInto(c1, "c1", owner);
            pollInto(c2, "c2", owner);
            eq(n, owner.size(), "records consumed by the group");
            long by1 = owner.values().stream().filter("c1"::equals).count();
            log("all %d consumed exactly once between the two members (c1 %d, c2 %d)", n, by1, n - by1);
            for (int i = 0; i < n; i++) check(owner.containsKey("k" + i), "k%d not consumed", i);
            c1.commitSync(Duration.ofSeconds(15));
            c2.commitSync(Duration.ofSeconds(15));

            try (Admin admin = admin()) {
                Map<TopicPartition, OffsetAndMetadata> committed =
                        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, SECONDS);
                eq(partitions(topic, 4), committed.keySet(), "partitions with committed offsets");
                long sum = 0;
                for (TopicPartition tp : committed.keySet()) {
                    eq(end.getOrDefault(tp, 0L), committed.get(tp).offset(), "committed offset of " + tp);
                    sum += committed.get(tp).offset();
                }
                eq((long) n, sum, "sum of committed offsets");
                log("Admin.listConsumerGroupOffsets: 4 partitions, each at its end offset, sum %d", sum);
            }

            long closeStart = System.currentTimeMillis();
            c2.close(Duration.ofSeconds(15));
            c2 = null;
            log("closed c2");
            int before = owner.size();
            deadline = System.currentTimeMillis() + 30_000;
            while (c1.assignment().size() != 4) {
                check(System.currentTimeMillis() < deadline,
                        "after c2 left, c1 did not get all 4 partitions within 30 s: c1=%s", tps(c1.assignment()));
                for (ConsumerRecord<String, String> r : c1.poll(Duration.ofMillis(200))) {
                    throw new CheckFailed("record " + r.key() + " redelivered after the commit");
                }
            }
            log("rebalance gave c1 all 4 partitions %.1f s after c2 closed: %s",
                    (System.currentTimeMillis() - closeStart) / 1000.0, tps(c1.assignment()));
            int after = c1.poll(Duration.ofMillis(1000)).count();
            eq(0, after, "records redelivered to c1 after the rebalance (all were committed)");
            eq(before, owner.size(), "records consumed");
        } finally {
            if (c2 != null) c2.close(Duration.ofSeconds(5));
            c1.close(Duration.ofSeconds(10));
        }
    }

    static void pollInto(KafkaConsumer<String, String> c, String name, Map<String, String> owner) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
            String prev = owner.put(r.key(), name);
            check(prev == null, "%s delivered twice (to %s, then to %s, offset %d of %s-%d)", r.key(), prev, name,
                    r.offset(), r.topic(), r.partition());
            eq("v" + r.key().substring(1), r.value(), "value of " + r.key());
            check(c.assignment().contains(new TopicPartition(r.topic(), r.partition())),
                    "%s got a record of unassigned partition %d", name, r.partition());
        }
    }

    // ---------------------------------------------------------------- admin

    static final List<String> FAILURES = new ArrayList<>();

    interface Step {
        void run() throws Exception;
    }

    /** Runs one admin call's checks; a failure is recorded and the next step still runs. */
    static void step(String name, Step s) {
        try {
            s.run();
        } catch (Throwable t) {
            String why = name + ": " + describe(t);
            log("  STEP FAILED %s", why);
            FAILURES.add(why);
        }
    }

    static void adminScenario() throws Exception {
        String t1 = "adm-" + UNIQ + "-one", t2 = "adm-" + UNIQ + "-two";
        String group = "g-adm-" + UNIQ;
        Uuid[] ids = new Uuid[2];
        long base = System.currentTimeMillis() - 60_000;
        try (Admin admin = admin()) {
            // createTopics with configs; the answer carries id, partitions, replication and configs
            Map<String, String> configs = Map.of("retention.ms", "3600000", "max.message.bytes", "200000",
                    "cleanup.policy", "delete");
            CreateTopicsResult cr = admin.createTopics(List.of(new NewTopic(t1, 3, (short) 1).configs(configs),
                    new NewTopic(t2, 1, (short) 1)));
            cr.all().get(30, SECONDS);
            eq(3, cr.numPartitions(t1).get(), "createTopics numPartitions(" + t1 + ")");
            eq(1, cr.replicationFactor(t1).get(), "createTopics replicationFactor(" + t1 + ")");
            ids[0] = cr.topicId(t1).get();
            ids[1] = cr.topicId(t2).get();
            check(ids[0] != null && !ids[0].equals(Uuid.ZERO_UUID), "createTopics topicId(%s) = %s", t1, ids[0]);
            check(!ids[0].equals(ids[1]), "two topics got the same id %s", ids[0]);
            step("createTopics returned configs", () -> {
                Config c = cr.config(t1).get();
                for (Map.Entry<String, String> e : configs.entrySet()) {
                    eq(e.getValue(), c.get(e.getKey()).value(), "createTopics config " + e.getKey());
                }
            });
            log("createTopics: %s (3 partitions, configs %s, id %s), %s (1 partition, id %s)", t1, configs, ids[0],
                    t2, ids[1]);
            step("createTopics of an existing topic", () -> {
                expectFailure("createTopics(" + t1 + ") again", TopicExistsException.class,
                        () -> admin.createTopics(List.of(new NewTopic(t1, 1, (short) 1))).all().get(30, SECONDS));
                log("createTopics of an existing topic: TopicExistsException");
            });

            step("listTopics", () -> {
                Set<String> names = admin.listTopics().names().get(30, SECONDS).stream()
                        .filter(s -> s.startsWith("adm-" + UNIQ)).collect(Collectors.toCollection(TreeSet::new));
                eq(new TreeSet<>(Set.of(t1, t2)), names, "listTopics (our prefix)");
                log("listTopics: %s", names);
            });

            step("describeTopics by name", () -> {
                Map<String, TopicDescription> d = admin.describeTopics(List.of(t1, t2)).allTopicNames()
                        .get(30, SECONDS);
                checkDescription(d.get(t1), t1, ids[0], 3);
                checkDescription(d.get(t2), t2, ids[1], 1);
                log("describeTopics(names): ids, partitions 0..n-1, leader/replicas/isr = node 0");
            });
            step("describeTopics by id", () -> {
                Map<Uuid, TopicDescription> d = admin.describeTopics(TopicCollection.ofTopicIds(List.of(ids[0],
                        ids[1]))).allTopicIds().get(30, SECONDS);
                eq(Set.of(ids[0], ids[1]), d.keySet(), "describeTopics(ids) keys");
                checkDescription(d.get(ids[0]), t1, ids[0], 3);
                checkDescription(d.get(ids[1]), t2, ids[1], 1);
                log("describeTopics(TopicCollection.ofTopicIds): names and partitions match");
            });
            step("describeTopics of an unknown topic", () -> {
                expectFailure("describeTopics(unknown)", UnknownTopicOrPartitionException.class,
                        () -> admin.describeTopics(List.of("adm-" + UNIQ + "-missing")).allTopicNames()
                                .get(30, SECONDS));
                log("describeTopics of an unknown topic: UnknownTopicOrPartitionException (not auto-created)");
            });

            step("describeCluster", () -> {
                DescribeClusterResult dc = admin.describeCluster();
                Collection<Node> nodes = dc.nodes().get(30, SECONDS);
                eq(1, nodes.size(), "describeCluster node count");
                Node node = nodes.iterator().next();
                eq(0, node.id(), "describeCluster node id");
                eq(bootstrap, node.host() + ":" + node.port(), "describeCluster node address");
                eq(0, dc.controller().get(30, SECONDS).id(), "describeCluster controller id");
                String cid = dc.clusterId().get(30, SECONDS);
                check(cid != null && !cid.isEmpty(), "describeCluster clusterId is empty");
                log("describeCluster: node 0 at %s, controller 0, clusterId %s", bootstrap, cid);
            });

            step("describeConfigs", () -> {
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t1);
                Config c = admin.describeConfigs(List.of(r)).all().get(30, SECONDS).get(r);
                for (Map.Entry<String, String> e : configs.entrySet()) {
                    ConfigEntry ce = c.get(e.getKey());
                    check(ce != null, "describeConfigs(%s) lacks %s", t1, e.getKey());
                    eq(e.getValue(), ce.value(), "describeConfigs " + e.getKey());
                    eq(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, ce.source(), "source of " + e.getKey());
                    eq(false, ce.isDefault(), "isDefault of " + e.getKey());
                }
                ConfigEntry ct = c.get("compression.type");
                check(ct != null, "describeConfigs(%s) lacks compression.type", t1);
                eq("producer", ct.value(), "default compression.type");
                eq(ConfigEntry.ConfigSource.DEFAULT_CONFIG, ct.source(), "source of compression.type");
                ConfigResource br = new ConfigResource(ConfigResource.Type.BROKER, "0");
                Config bc = admin.describeConfigs(List.of(br)).all().get(30, SECONDS).get(br);
                check(!bc.entries().isEmpty(), "describeConfigs(broker 0) has no entries");
                log("describeConfigs: topic overrides DYNAMIC_TOPIC_CONFIG, compression.type=producer "
                        + "DEFAULT_CONFIG; broker 0 has %d entries", bc.entries().size());
            });

            step("createPartitions", () -> {
                CreatePartitionsResult r = admin.createPartitions(Map.of(t2, NewPartitions.increaseTo(3)));
                r.all().get(30, SECONDS);
                TopicDescription d = admin.describeTopics(List.of(t2)).allTopicNames().get(30, SECONDS).get(t2);
                checkDescription(d, t2, ids[1], 3);
                expectFailure("createPartitions(" + t2 + " to 2)", InvalidPartitionsException.class,
                        () -> admin.createPartitions(Map.of(t2, NewPartitions.increaseTo(2))).all()
                                .get(30, SECONDS));
                log("createPartitions: %s 1 -> 3 (described with 3); decreasing to 2 -> InvalidPartitionsException",
                        t2);
            });

            // Records for the offset and group checks: 10 per partition of t1, partition 0 with
            // explicit timestamps base+i s, except offset 6 which carries the maximum (base+100 s).
            List<ProducerRecord<String, String>> recs = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                for (int i = 0; i < 10; i++) {
                    long ts = (p == 0 && i == 6) ? base + 100_000 : base + i * 1000L;
                    recs.add(new ProducerRecord<>(t1, p, ts, "p" + p + "k" + i, "v" + i));
                }
            }
            // A long linger and flush(): each partition's 10 records travel as one batch.
            try (KafkaProducer<String, String> p = producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, "5000"))) {
                sendAll(p, recs);
            }
            log("produced 10 records to each partition of %s, one batch per partition", t1);

            // Kafka (3.8+, KAFKA-16310) answers with the exact record, not its batch.
            TopicPartition lp = new TopicPartition(t1, 0);
            step("listOffsets earliest", () -> {
                ListOffsetsResultInfo e = admin.listOffsets(Map.of(lp, OffsetSpec.earliest())).partitionResult(lp)
                        .get(30, SECONDS);
                eq(0L, e.offset(), "listOffsets earliest");
                log("listOffsets earliest: 0");
            });
            step("listOffsets latest", () -> {
                ListOffsetsResultInfo l = admin.listOffsets(Map.of(lp, OffsetSpec.latest())).partitionResult(lp)
                        .get(30, SECONDS);
                eq(10L, l.offset(), "listOffsets latest");
                log("listOffsets latest: 10");
            });
            step("listOffsets maxTimestamp", () -> {
                ListOffsetsResultInfo m = admin.listOffsets(Map.of(lp, OffsetSpec.maxTimestamp()))
                        .partitionResult(lp).get(30, SECONDS);
                eq("offset 6 ts base+100000", "offset " + m.offset() + " ts base+" + (m.timestamp() - base),
                        "listOffsets maxTimestamp (10 records in one batch, the max at offset 6)");
                log("listOffsets maxTimestamp: offset 6, its timestamp");
            });
            step("listOffsets forTimestamp", () -> {
                ListOffsetsResultInfo f = admin.listOffsets(Map.of(lp, OffsetSpec.forTimestamp(base + 3500)))
                        .partitionResult(lp).get(30, SECONDS);
                eq("offset 4 ts base+4000", "offset " + f.offset() + " ts base+" + (f.timestamp() - base),
                        "listOffsets forTimestamp(base+3500) (record i has ts base+1000*i, one batch)");
                ListOffsetsResultInfo none = admin.listOffsets(Map.of(lp, OffsetSpec.forTimestamp(base + 200_000)))
                        .partitionResult(lp).get(30, SECONDS);
                eq(-1L, none.offset(), "listOffsets forTimestamp(after every record) offset");
                log("listOffsets forTimestamp: first record at or after it (offset 4); past the end -> -1");
            });

            // A classic group with one member that consumed and committed all 30 records.
            Map<String, String> gc = new HashMap<>();
            gc.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            gc.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
            gc.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            KafkaConsumer<String, String> member = consumer(gc);
            try {
                member.subscribe(List.of(t1));
                int got = 0;
                long deadline = System.currentTimeMillis() + 30_000;
                while (got < 30 && System.currentTimeMillis() < deadline) got += member.poll(Duration.ofMillis(300))
                        .count();
                eq(30, got, "records consumed by the group member");
                member.commitSync(Duration.ofSeconds(15));
                log("group %s: one member consumed and committed the 30 records of %s", group, t1);

                step("listConsumerGroups", () -> {
                    Set<String> groups = admin.listConsumerGroups().all().get(30, SECONDS).stream()
                            .map(ConsumerGroupListing::groupId).filter(g -> g.contains(UNIQ))
                            .collect(Collectors.toSet());
                    eq(Set.of(group), groups, "listConsumerGroups (ours)");
                    log("listConsumerGroups: %s", groups);
                });
                step("describeConsumerGroups (active member)", () -> {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                            .get(30, SECONDS).get(group);
                    eq("stable", d.state().toString().toLowerCase(Locale.ROOT), "group state");
                    eq(1, d.members().size(), "member count");
                    MemberDescription m = d.members().iterator().next();
                    eq(partitions(t1, 3), m.assignment().topicPartitions(), "member assignment");
                    eq("range", d.partitionAssignor(), "partition assignor");
                    eq(false, d.isSimpleConsumerGroup(), "isSimpleConsumerGroup");
                    eq(0, d.coordinator().id(), "coordinator");
                    log("describeConsumerGroups: Stable, 1 member (%s) with %s, assignor range, coordinator 0",
                            m.clientId(), tps(m.assignment().topicPartitions()));
                });
            } finally {
                member.close(Duration.ofSeconds(10));
            }
            log("closed the member");

            step("describeConsumerGroups (empty)", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get(30, SECONDS)
                        .get(group);
                eq("empty", d.state().toString().toLowerCase(Locale.ROOT), "group state after close");
                eq(0, d.members().size(), "member count after close");
                log("describeConsumerGroups after close: Empty, no members");
            });
            step("listConsumerGroupOffsets", () -> {
                Map<TopicPartition, Long> o = offsets(admin, group);
                eq(Map.of(tp(t1, 0), 10L, tp(t1, 1), 10L, tp(t1, 2), 10L), o, "listConsumerGroupOffsets");
                log("listConsumerGroupOffsets: %s", new TreeMap<>(strKeys(o)));
            });
            step("alterConsumerGroupOffsets", () -> {
                admin.alterConsumerGroupOffsets(group, Map.of(tp(t1, 0), new OffsetAndMetadata(5)))
                        .all().get(30, SECONDS);
                Map<TopicPartition, Long> o = offsets(admin, group);
                eq(Map.of(tp(t1, 0), 5L, tp(t1, 1), 10L, tp(t1, 2), 10L), o, "offsets after alter");
                log("alterConsumerGroupOffsets: %s-0 -> 5", t1);
            });
            step("deleteConsumerGroupOffsets", () -> {
                admin.deleteConsumerGroupOffsets(group, Set.of(tp(t1, 1))).all().get(30, SECONDS);
                Map<TopicPartition, Long> o = offsets(admin, group);
                eq(Map.of(tp(t1, 0), 5L, tp(t1, 2), 10L), o, "offsets after deleting " + t1 + "-1");
                log("deleteConsumerGroupOffsets: %s-1 gone", t1);
            });
            step("deleteConsumerGroups", () -> {
                admin.deleteConsumerGroups(List.of(group)).all().get(30, SECONDS);
                Set<String> groups = admin.listConsumerGroups().all().get(30, SECONDS).stream()
                        .map(ConsumerGroupListing::groupId).filter(g -> g.contains(UNIQ))
                        .collect(Collectors.toSet());
                eq(Set.of(), groups, "listConsumerGroups after delete");
                expectFailure("deleteConsumerGroups again", GroupIdNotFoundException.class,
                        () -> admin.deleteConsumerGroups(List.of(group)).all().get(30, SECONDS));
                log("deleteConsumerGroups: gone from listConsumerGroups; deleting again -> GroupIdNotFoundException");
            });

            step("describeFeatures", () -> {
                FeatureMetadata fm = admin.describeFeatures().featureMetadata().get(30, SECONDS);
                log("describeFeatures: finalized %s, supported %s, epoch %s", fm.finalizedFeatures(),
                        fm.supportedFeatures(), fm.finalizedFeaturesEpoch());
            });
            step("describeMetadataQuorum", () -> {
                QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(30, SECONDS);
                eq(0, q.leaderId(), "quorum leader");
                eq(List.of(0), q.voters().stream().map(QuorumInfo.ReplicaState::replicaId)
                        .collect(Collectors.toList()), "quorum voters");
                eq(List.of(), q.observers().stream().map(QuorumInfo.ReplicaState::replicaId)
                        .collect(Collectors.toList()), "quorum observers");
                log("describeMetadataQuorum: leader 0, voters [0], no observers, epoch %d, high watermark %d",
                        q.leaderEpoch(), q.highWatermark());
            });
            step("listPartitionReassignments", () -> {
                Map<TopicPartition, PartitionReassignment> r = admin.listPartitionReassignments().reassignments()
                        .get(30, SECONDS);
                eq(Map.of(), r, "listPartitionReassignments");
                log("listPartitionReassignments: none");
            });

            step("deleteTopics", () -> {
                admin.deleteTopics(List.of(t1)).all().get(30, SECONDS);
                admin.deleteTopics(TopicCollection.ofTopicIds(List.of(ids[1]))).all().get(30, SECONDS);
                Set<String> left = null;
                long deadline = System.currentTimeMillis() + 5_000;
                while (System.currentTimeMillis() < deadline) {
                    left = admin.listTopics().names().get(30, SECONDS).stream()
                            .filter(s -> s.startsWith("adm-" + UNIQ)).collect(Collectors.toSet());
                    if (left.isEmpty()) break;
                    Thread.sleep(200);
                }
                eq(Set.of(), left, "topics listed after deleteTopics");
                expectFailure("describeTopics(" + t1 + ") after delete", UnknownTopicOrPartitionException.class,
                        () -> admin.describeTopics(List.of(t1)).allTopicNames().get(30, SECONDS));
                log("deleteTopics: %s by name, %s by id; both gone", t1, t2);
            });
        }
        if (!FAILURES.isEmpty()) {
            throw new CheckFailed(FAILURES.size() + " admin step(s) failed: " + String.join(" | ", FAILURES));
        }
    }

    static TopicPartition tp(String t, int p) {
        return new TopicPartition(t, p);
    }

    static Map<String, Long> strKeys(Map<TopicPartition, Long> m) {
        return m.entrySet().stream().collect(Collectors.toMap(e -> e.getKey().toString(), Map.Entry::getValue));
    }

    static Map<TopicPartition, Long> offsets(Admin admin, String group) throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, SECONDS).entrySet()
                .stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    static void checkDescription(TopicDescription d, String name, Uuid id, int partitions) {
        check(d != null, "no description of %s", name);
        eq(name, d.name(), "described name");
        eq(id, d.topicId(), "topic id of " + name);
        eq(false, d.isInternal(), "isInternal of " + name);
        eq(partitions, d.partitions().size(), "partition count of " + name);
        for (int i = 0; i < partitions; i++) {
            TopicPartitionInfo p = d.partitions().get(i);
            eq(i, p.partition(), name + " partition index");
            eq(0, p.leader() == null ? null : p.leader().id(), name + "-" + i + " leader");
            eq(List.of(0), p.replicas().stream().map(Node::id).collect(Collectors.toList()), name + "-" + i
                    + " replicas");
            eq(List.of(0), p.isr().stream().map(Node::id).collect(Collectors.toList()), name + "-" + i + " isr");
        }
    }

    // ---------------------------------------------------------------- admin-alter-configs (issue 10)

    static void adminAlterConfigs() throws Exception {
        String t = "alt-" + UNIQ;
        try (Admin admin = admin()) {
            createTopic(admin, t, 1, Map.of("retention.ms", "3600000", "max.message.bytes", "200000"));
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
            Map<ConfigResource, Collection<AlterConfigOp>> ops = Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE)));
            if (!expectPass) {
                long start = System.currentTimeMillis();
                expectFailure("incrementalAlterConfigs", UnsupportedVersionException.class,
                        () -> admin.incrementalAlterConfigs(ops).all().get(30, SECONDS));
                long ms = System.currentTimeMillis() - start;
                check(ms < 10_000, "incrementalAlterConfigs took %d ms to fail", ms);
                log("interim: incrementalAlterConfigs failed in %d ms with UnsupportedVersionException", ms);
                return;
            }
            admin.incrementalAlterConfigs(ops).all().get(30, SECONDS);
            Config c = admin.describeConfigs(List.of(r)).all().get(30, SECONDS).get(r);
            eq("7200000", c.get("retention.ms").value(), "retention.ms after SET");
            eq(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("retention.ms").source(), "source of retention.ms");
            eq(ConfigEntry.ConfigSource.DEFAULT_CONFIG, c.get("max.message.bytes").source(),
                    "source of max.message.bytes after DELETE");
            log("incrementalAlterConfigs: retention.ms SET to 7200000, max.message.bytes back to default (%s)",
                    c.get("max.message.bytes").value());
            expectFailure("incrementalAlterConfigs(retention.ms=abc)",
                    org.apache.kafka.common.errors.InvalidConfigurationException.class,
                    () -> admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
                            new ConfigEntry("retention.ms", "abc"), AlterConfigOp.OpType.SET)))).all()
                            .get(30, SECONDS));
            log("incrementalAlterConfigs with an invalid value: InvalidConfigurationException");
        }
    }

    // ---------------------------------------------------------------- admin-log-dirs (issue 10)

    static void adminLogDirs() throws Exception {
        String t = "ld-" + UNIQ;
        try (Admin admin = admin()) {
            createTopic(admin, t, 2, Map.of());
            if (!expectPass) {
                long start = System.currentTimeMillis();
                expectFailure("describeLogDirs", UnsupportedVersionException.class,
                        () -> admin.describeLogDirs(List.of(0)).allDescriptions().get(30, SECONDS));
                long ms = System.currentTimeMillis() - start;
                check(ms < 10_000, "describeLogDirs took %d ms to fail", ms);
                log("interim: describeLogDirs failed in %d ms with UnsupportedVersionException", ms);
                return;
            }
            try (KafkaProducer<String, String> p = producer(Map.of())) {
                List<ProducerRecord<String, String>> recs = new ArrayList<>();
                for (int i = 0; i < 10; i++) recs.add(new ProducerRecord<>(t, 0, "k" + i, "v" + i));
                sendAll(p, recs);
            }
            Map<Integer, Map<String, LogDirDescription>> all = admin.describeLogDirs(List.of(0)).allDescriptions()
                    .get(30, SECONDS);
            eq(Set.of(0), all.keySet(), "brokers described");
            eq(1, all.get(0).size(), "log dirs of broker 0");
            LogDirDescription d = all.get(0).values().iterator().next();
            check(d.error() == null, "log dir error %s", d.error());
            Map<TopicPartition, ReplicaInfo> ri = d.replicaInfos();
            check(ri.containsKey(tp(t, 0)) && ri.containsKey(tp(t, 1)), "replicas of %s missing: %s", t, ri.keySet());
            check(ri.get(tp(t, 0)).size() > 0, "size of %s-0 is %d after 10 records", t, ri.get(tp(t, 0)).size());
            eq(0L, ri.get(tp(t, 1)).size(), "size of the empty " + t + "-1");
            log("describeLogDirs: one dir %s; %s-0 %d bytes, %s-1 empty", all.get(0).keySet(), t,
                    ri.get(tp(t, 0)).size(), t);
        }
    }

    // ---------------------------------------------------------------- transactions (issue 12)

    static void transactions() throws Exception {
        String t = "tx-" + UNIQ;
        Map<String, String> cfg = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "txid-" + UNIQ);
        if (!expectPass) {
            KafkaProducer<String, String> p = producer(cfg);
            long start = System.currentTimeMillis();
            try {
                expectFailure("initTransactions", TransactionalIdAuthorizationException.class, () -> {
                    p.initTransactions();
                    return "initTransactions() returned";
                });
            } finally {
                p.close(Duration.ofSeconds(5));
            }
            long ms = System.currentTimeMillis() - start;
            check(ms < 15_000, "initTransactions took %d ms to fail", ms);
            log("interim: initTransactions failed in %d ms with TransactionalIdAuthorizationException", ms);
            return;
        }
        createTopic(t, 1);
        try (KafkaProducer<String, String> p = producer(cfg)) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(t, 0, "k" + i, "v" + i));
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(t, 0, "a" + i, "aborted"));
            // Written before the abort (else the producer may drop them unsent, and the
            // offsets below depend on timing).
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            for (int i = 10; i < 15; i++) p.send(new ProducerRecord<>(t, 0, "k" + i, "v" + i));
            p.commitTransaction();
        }
        log("committed 10, aborted 10, committed 5");
        // offsets: k0..k9 0-9, marker 10, aborted 11-20, marker 21, k10..k14 22-26, marker 27
        List<String> committed = readAll(t, "read_committed", 15);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 10; i++) expected.add("k" + i + "@" + i);
        for (int i = 10; i < 15; i++) expected.add("k" + i + "@" + (i + 12));
        eq(expected, committed, "read_committed records (key@offset)");
        List<String> all = readAll(t, "read_uncommitted", 25);
        eq(25, all.size(), "read_uncommitted record count");
        log("read_committed sees exactly the 15 committed records; read_uncommitted sees 25");
        // A zombie: a second producer with the same transactional id fences the first,
        // whose commit then fails with ProducerFencedException; its open records are aborted.
        String z = "txz-" + UNIQ;
        createTopic(z, 1);
        Map<String, String> zcfg = Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "txz-" + UNIQ);
        KafkaProducer<String, String> zombie = producer(zcfg);
        try (KafkaProducer<String, String> successor = producer(zcfg)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(z, 0, "zombie", "z"));
            zombie.flush();
            successor.initTransactions();
            expectFailure("the zombie's commitTransaction", ProducerFencedException.class, () -> {
                zombie.commitTransaction();
                return "commitTransaction() returned";
            });
            successor.beginTransaction();
            successor.send(new ProducerRecord<>(z, 0, "successor", "s"));
            successor.commitTransaction();
        } finally {
            zombie.close(Duration.ofSeconds(5));
        }
        // offsets: zombie 0, abort marker 1, successor 2, commit marker 3
        eq(List.of("successor@2"), readAll(z, "read_committed", 1), "read_committed after the zombie");
        log("a second producer fenced the zombie (ProducerFencedException); only its own record is committed");
    }

    static List<String> readAll(String t, String isolation, int n) {
        List<String> out = new ArrayList<>();
        TopicPartition tp = tp(t, 0);
        try (KafkaConsumer<String, String> c = consumer(Map.of("isolation.level", isolation))) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 20_000;
            while (out.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    out.add(r.key() + "@" + r.offset());
                }
            }
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) out.add(r.key() + "@" + r.offset());
        }
        return out;
    }
}
