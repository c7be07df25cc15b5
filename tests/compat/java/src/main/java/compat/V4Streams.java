package compat;

import static compat.Compat.UNIQ;
import static compat.Compat.check;
import static compat.Compat.describe;
import static compat.Compat.eq;
import static compat.Compat.hasCause;
import static compat.Compat.log;
import static java.util.concurrent.TimeUnit.SECONDS;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/** Kafka Streams word count (4.x line only: V4*.java is left out of the 3.x build). */
public final class V4Streams {
    static final List<String> LINES = List.of(
            "the quick brown fox jumps over the lazy dog",
            "the dog barks",
            "a fox and a dog",
            "The END");
    /** Counted by hand from LINES (lower-cased, split on non-word characters). */
    static final Map<String, Long> EXPECTED = new TreeMap<>(Map.ofEntries(
            Map.entry("the", 4L), Map.entry("quick", 1L), Map.entry("brown", 1L), Map.entry("fox", 2L),
            Map.entry("jumps", 1L), Map.entry("over", 1L), Map.entry("lazy", 1L), Map.entry("dog", 3L),
            Map.entry("barks", 1L), Map.entry("a", 2L), Map.entry("and", 1L), Map.entry("end", 1L)));

    public static void run(String scenario) throws Exception {
        if (scenario.startsWith("streams-wordcount-eos-restart")) {
            V4StreamsRestart.run(scenario);
            return;
        }
        boolean eos = scenario.equals("streams-wordcount-eos");
        if (!eos && !scenario.equals("streams-wordcount")) throw new IllegalArgumentException(scenario);
        String app = (eos ? "wceos-" : "wc-") + UNIQ;
        String in = app + "-input", out = app + "-output";
        try (Admin admin = Compat.admin()) {
            Compat.createTopic(admin, in, 2, Map.of());
            Compat.createTopic(admin, out, 2, Map.of());
        }
        try (KafkaProducer<String, String> p = Compat.producer(Map.of())) {
            List<ProducerRecord<String, String>> recs = new ArrayList<>();
            for (int i = 0; i < LINES.size(); i++) recs.add(new ProducerRecord<>(in, "line" + i, LINES.get(i)));
            Compat.sendAll(p, recs);
        }
        log("produced %d lines to %s", LINES.size(), in);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(v -> Arrays.asList(v.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((k, w) -> !w.isEmpty())
                .groupBy((k, w) -> w, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));

        Path stateDir = Files.createTempDirectory("compat-streams-");
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, Compat.bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, eos ? StreamsConfig.EXACTLY_ONCE_V2
                : StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "500");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        AtomicReference<Throwable> uncaught = new AtomicReference<>();
        List<String> states = new ArrayList<>();
        KafkaStreams streams = new KafkaStreams(b.build(), props);
        streams.setStateListener((n, o) -> {
            synchronized (states) {
                states.add(n.toString());
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            uncaught.compareAndSet(null, e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        long start = System.currentTimeMillis();
        streams.start();
        log("started Kafka Streams app %s (processing.guarantee=%s)", app, eos ? "exactly_once_v2" : "at_least_once");
        try {
            if (eos && !Compat.expectPass) {
                interimEos(streams, uncaught, states, start);
                return;
            }
            Map<String, Long> last = new TreeMap<>();
            int updates = 0;
            Properties cp = new Properties();
            cp.put("bootstrap.servers", Compat.bootstrap);
            cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp, new StringDeserializer(),
                    new LongDeserializer())) {
                List<TopicPartition> tps = List.of(new TopicPartition(out, 0), new TopicPartition(out, 1));
                c.assign(tps);
                c.seekToBeginning(tps);
                long deadline = System.currentTimeMillis() + 60_000;
                while (!last.equals(EXPECTED)) {
                    check(uncaught.get() == null, "stream thread died: %s", uncaught.get() == null ? ""
                            : describe(uncaught.get()));
                    check(System.currentTimeMillis() < deadline,
                            "after 60 s the output's final counts are %s, expected %s (states %s)", last, EXPECTED,
                            states);
                    for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(300))) {
                        last.put(r.key(), r.value());
                        updates++;
                    }
                }
                log("output %s reached the expected final counts after %.1f s (%d updates): %s", out,
                        (System.currentTimeMillis() - start) / 1000.0, updates, last);
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(1500))) {
                    last.put(r.key(), r.value());
                }
                eq(EXPECTED, last, "final counts 1.5 s later");
                eq((long) EXPECTED.values().stream().mapToLong(Long::longValue).sum(), (long) updates,
                        "count updates (statestore cache off: one per word occurrence)");
            }
            try (Admin admin = Compat.admin()) {
                Set<String> internal = admin.listTopics().names().get(30, SECONDS).stream()
                        .filter(t -> t.startsWith(app + "-") && !t.equals(in) && !t.equals(out))
                        .collect(Collectors.toCollection(TreeSet::new));
                eq(new TreeSet<>(Set.of(app + "-counts-changelog", app + "-by-word-repartition")), internal,
                        "internal topics (Admin.listTopics)");
                log("internal topics created by Streams: %s", internal);
            }
            eq("RUNNING", streams.state().toString(), "Streams state");
        } finally {
            streams.close(Duration.ofSeconds(15));
            streams.cleanUp();
            Utils.delete(stateDir.toFile());
        }
    }

    static void interimEos(KafkaStreams streams, AtomicReference<Throwable> uncaught, List<String> states,
            long start) throws InterruptedException {
        long deadline = start + 30_000;
        while (System.currentTimeMillis() < deadline && !streams.state().toString().equals("ERROR")) {
            Thread.sleep(100);
        }
        long ms = System.currentTimeMillis() - start;
        String st = streams.state().toString();
        synchronized (states) {
            log("states: %s; after %d ms: %s", states, ms, st);
        }
        check(st.equals("ERROR"), "Streams is %s after 30 s, expected ERROR (uncaught: %s)", st,
                uncaught.get() == null ? "none" : describe(uncaught.get()));
        Throwable e = uncaught.get();
        check(e != null, "Streams reached ERROR without an uncaught exception");
        check(hasCause(e, TransactionalIdAuthorizationException.class),
                "expected TransactionalIdAuthorizationException in the cause chain, got %s", describe(e));
        log("interim: exactly_once_v2 app reached ERROR in %d ms with %s", ms, describe(e));
    }
}
