package compat;

import static compat.Compat.UNIQ;
import static compat.Compat.check;
import static compat.Compat.eq;
import static compat.Compat.log;
import static compat.Compat.tps;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Pattern subscriptions with group.protocol=consumer (4.x line only: V4*.java is left out
 * of the 3.x build).
 * <ul>
 * <li>group-consumer-regex: {@code subscribe(SubscriptionPattern)}, the KIP-848 regex that
 * the group coordinator (the broker) resolves and re-resolves when topics appear.
 * <li>group-consumer-pattern: {@code subscribe(java.util.regex.Pattern)}, which the Java
 * client resolves itself against Metadata (refreshed every metadata.max.age.ms, 2 s here)
 * and sends to the broker as a list of topic names.
 * </ul>
 * Both: two matching topics exist before subscribe, one matching topic is created after,
 * and a non-matching topic must stay out; 10 records per topic, exactly the 30 matching
 * ones are consumed.
 */
public final class V4Regex {
    public static void run(String scenario) throws Exception {
        boolean serverSide = switch (scenario) {
            case "group-consumer-regex" -> true;
            case "group-consumer-pattern" -> false;
            default -> throw new IllegalArgumentException(scenario);
        };
        String prefix = "rx-" + UNIQ + "-";
        String a = prefix + "a", b = prefix + "b", c = prefix + "c", other = "other-" + UNIQ;
        String group = "g-rx-" + UNIQ;
        try (Admin admin = Compat.admin()) {
            Compat.createTopic(admin, a, 2, Map.of());
            Compat.createTopic(admin, b, 2, Map.of());
            Compat.createTopic(admin, other, 1, Map.of());
        }
        Map<String, String> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cfg.put("group.protocol", "consumer");
        if (!serverSide) cfg.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "2000");
        Map<String, String> seen = new HashMap<>();
        try (KafkaConsumer<String, String> con = Compat.consumer(cfg)) {
            String regex = prefix + ".*"; // UNIQ is hex: no metacharacters to quote
            if (serverSide) {
                con.subscribe(new SubscriptionPattern(regex));
                log("subscribed to SubscriptionPattern(\"%s\") (broker-side regex, group.protocol=consumer)", regex);
            } else {
                con.subscribe(Pattern.compile(regex));
                log("subscribed to java.util.regex.Pattern \"%s\" (client-side, metadata.max.age.ms=2000, "
                        + "group.protocol=consumer)", regex);
            }
            Set<TopicPartition> want = new HashSet<>(Compat.partitions(a, 2));
            want.addAll(Compat.partitions(b, 2));
            waitAssignment(con, want, 30, seen);
            log("assigned the 4 partitions of the two matching topics: %s", tps(con.assignment()));
            try (Admin admin = Compat.admin()) {
                Compat.createTopic(admin, c, 1, Map.of());
            }
            long created = System.currentTimeMillis();
            want.add(new TopicPartition(c, 0));
            waitAssignment(con, want, 45, seen);
            log("%s, created after subscribe, joined the assignment %.1f s later: %s", c,
                    (System.currentTimeMillis() - created) / 1000.0, tps(con.assignment()));

            List<ProducerRecord<String, String>> recs = new ArrayList<>();
            for (String t : List.of(a, b, c, other)) {
                for (int i = 0; i < 10; i++) recs.add(new ProducerRecord<>(t, t + "/k" + i, "v" + i));
            }
            try (KafkaProducer<String, String> p = Compat.producer(Map.of())) {
                Compat.sendAll(p, recs);
            }
            log("produced 10 records to each of %s, %s, %s and the non-matching %s", a, b, c, other);
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen.size() < 30 && System.currentTimeMillis() < deadline) poll(con, seen);
            poll(con, seen);
            Set<String> expected = new TreeSet<>();
            for (String t : List.of(a, b, c)) for (int i = 0; i < 10; i++) expected.add(t + "/k" + i);
            eq(expected, new TreeSet<>(seen.keySet()), "keys consumed through the pattern");
            con.commitSync(Duration.ofSeconds(15));
            log("consumed exactly the 30 records of the 3 matching topics, none of %s; committed", other);
        }
    }

    static void poll(KafkaConsumer<String, String> con, Map<String, String> seen) {
        for (ConsumerRecord<String, String> r : con.poll(Duration.ofMillis(300))) {
            check(seen.put(r.key(), r.value()) == null, "%s delivered twice", r.key());
            eq("v" + r.key().substring(r.key().lastIndexOf("/k") + 2), r.value(), "value of " + r.key());
        }
    }

    static void waitAssignment(KafkaConsumer<String, String> con, Set<TopicPartition> want, int seconds,
            Map<String, String> seen) {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (!con.assignment().equals(want)) {
            check(System.currentTimeMillis() < deadline, "assignment after %d s is %s, expected %s", seconds,
                    tps(con.assignment()), tps(want));
            poll(con, seen);
        }
    }
}
