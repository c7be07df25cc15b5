package compat;

import static compat.Compat.UNIQ;
import static compat.Compat.check;
import static compat.Compat.describe;
import static compat.Compat.eq;
import static compat.Compat.log;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
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

/**
 * Kafka Streams word count with exactly_once_v2 while the broker is killed (kill -9) and
 * restarted mid-run (issue 12). The driver does the restart: this program creates
 * {@code $COMPAT_RESTART_DIR/request} (holding the seconds the broker stays dead) when it
 * wants the broker killed and waits for
 * {@code $COMPAT_RESTART_DIR/done} (test_compat.py, cells with "broker_restart").
 *
 * <p>Exactly once means more than the right final counts: with the state store cache off
 * Streams emits one update per word occurrence, so the committed output holds, for every
 * word, exactly the values 1, 2, ..., n in order: a duplicate (a re-processed input whose
 * first output was not aborted) or a loss shows up as a repeated or missing value.
 */
final class V4StreamsRestart {
    static final String[] VOCAB = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
            "india", "juliet", "kilo", "lima"};
    static final int LINES = 400;
    /**
     * How long the broker stays dead, in seconds: longer than the producers'
     * transaction.timeout.ms below, so the transactions open at the kill are past their
     * timeout when the broker comes back. Either the producer commits one before the
     * coordinator's timeout scan (the usual case here, with the default 10 s scan
     * interval) or the coordinator aborts it and fences the producer, and Streams'
     * tasks restore from the changelogs; both must give exactly once.
     */
    static final int DOWN_S = 4;

    static String line(int i) {
        StringBuilder b = new StringBuilder();
        for (int k = 0; k <= i % 4; k++) {
            if (k > 0) b.append(' ');
            b.append(VOCAB[(i * 7 + k * 5) % VOCAB.length]);
        }
        return b.toString();
    }

    /**
     * {@code streams-wordcount-eos-restart}, or {@code ...-restart-fenced}: the same program,
     * run against a broker whose timeout scan runs every 300 ms (matrix.json's
     * broker_args), so the coordinator aborts the transactions the kill left open before
     * Streams' producers get back to them: the producers are fenced and the tasks migrate.
     */
    static void run(String scenario) throws Exception {
        boolean fenced = scenario.endsWith("-fenced");
        String dir = System.getenv("COMPAT_RESTART_DIR");
        check(dir != null, "COMPAT_RESTART_DIR is not set: this scenario needs a driver that restarts the broker");
        Path request = Path.of(dir, "request"), done = Path.of(dir, "done");
        Map<String, Long> expected = new TreeMap<>();
        for (int i = 0; i < LINES; i++) {
            for (String w : line(i).split(" ")) expected.merge(w, 1L, Long::sum);
        }
        long occurrences = expected.values().stream().mapToLong(Long::longValue).sum();

        String app = (fenced ? "wcrf-" : "wcr-") + UNIQ;
        String in = app + "-input", out = app + "-output";
        try (Admin admin = Compat.admin()) {
            Compat.createTopic(admin, in, 2, Map.of());
            Compat.createTopic(admin, out, 2, Map.of());
        }

        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(v -> List.of(v.split(" ")))
                .groupBy((k, w) -> w, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Path stateDir = Files.createTempDirectory("compat-streams-restart-");
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, Compat.bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        props.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), "3000");

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

        // The input, paced over ~10 s, so that the kill lands while Streams is processing
        // (a transaction open on its tasks) and most of the input arrives after it.
        AtomicInteger sent = new AtomicInteger();
        AtomicReference<Throwable> feedError = new AtomicReference<>();
        Thread feeder = new Thread(() -> {
            try (KafkaProducer<String, String> p = Compat.producer(Map.of())) {
                for (int i = 0; i < LINES; i++) {
                    p.send(new ProducerRecord<>(in, "line" + i, line(i)), (md, e) -> {
                        if (e != null) feedError.compareAndSet(null, e);
                    });
                    sent.incrementAndGet();
                    Thread.sleep(25);
                }
                p.flush();
            } catch (Throwable e) {
                feedError.compareAndSet(null, e);
            }
        }, "feeder");

        long start = System.currentTimeMillis();
        streams.start();
        feeder.start();
        log("started Kafka Streams app %s (exactly_once_v2) and the feeder of %d lines (%d word occurrences)",
                app, LINES, occurrences);
        Map<String, List<Long>> seen = new TreeMap<>();
        int updates = 0;
        boolean restarted = false;
        Properties cp = new Properties();
        cp.put("bootstrap.servers", Compat.bootstrap);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp, new StringDeserializer(),
                new LongDeserializer())) {
            List<TopicPartition> tps = List.of(new TopicPartition(out, 0), new TopicPartition(out, 1));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 90_000;
            while (updates < occurrences) {
                check(uncaught.get() == null, "stream thread died: %s (states %s)",
                        uncaught.get() == null ? "" : describe(uncaught.get()), states);
                check(feedError.get() == null, "the feeder failed: %s",
                        feedError.get() == null ? "" : describe(feedError.get()));
                check(System.currentTimeMillis() < deadline,
                        "after 90 s the committed output holds %d of %d updates (restarted: %s, states %s)",
                        updates, occurrences, restarted, states);
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                    seen.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                    updates++;
                }
                if (!restarted && updates >= 150) {
                    log("%d updates committed, %d lines sent: asking the driver to kill -9 and restart the broker",
                            updates, sent.get());
                    Files.writeString(request, Integer.toString(DOWN_S));
                    long waitUntil = System.currentTimeMillis() + 60_000 + DOWN_S * 1000L;
                    while (!Files.exists(done)) {
                        check(System.currentTimeMillis() < waitUntil, "the driver did not restart the broker in 60 s");
                        Thread.sleep(50);
                    }
                    restarted = true;
                    log("the broker is back after a kill -9 and %d s down", DOWN_S);
                }
            }
            log("%d updates after %.1f s", updates, (System.currentTimeMillis() - start) / 1000.0);
            for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(2000))) {
                seen.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                updates++;
            }
        } finally {
            feeder.join(30_000);
            streams.close(Duration.ofSeconds(15));
            streams.cleanUp();
            Utils.delete(stateDir.toFile());
        }
        check(restarted, "the broker was never restarted");
        Map<String, Long> last = new TreeMap<>();
        for (Map.Entry<String, List<Long>> e : seen.entrySet()) {
            List<Long> values = e.getValue();
            List<Long> want = new ArrayList<>();
            for (long v = 1; v <= values.size(); v++) want.add(v);
            eq(want, values, "committed count updates of '" + e.getKey() + "' (each value exactly once, in order)");
            last.put(e.getKey(), values.get(values.size() - 1));
        }
        eq(expected, last, "final counts");
        eq(occurrences, (long) updates, "committed count updates (one per word occurrence)");
        log("every word's committed updates are 1..n exactly once across the kill -9: %s", last);
        // What the kill cost: records a read_uncommitted consumer sees beyond the committed
        // ones were written by transactions the restart aborted (0 when the kill fell
        // between two transactions or the open one survived it).
        Properties up = new Properties();
        up.put("bootstrap.servers", Compat.bootstrap);
        up.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(up, new StringDeserializer(),
                new LongDeserializer())) {
            List<TopicPartition> tps = List.of(new TopicPartition(out, 0), new TopicPartition(out, 1));
            c.assign(tps);
            c.seekToBeginning(tps);
            long total = 0, until = System.currentTimeMillis() + 5_000;
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            while (System.currentTimeMillis() < until
                    && tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                total += c.poll(Duration.ofMillis(200)).count();
            }
            log("read_uncommitted sees %d records in the output: %d from aborted transactions", total,
                    total - occurrences);
        }
    }
}
