package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

var saramaScenarios = map[string]scenarioFn{
	"produce-consume":     saramaProduceConsume,
	"compression-gzip":    saramaCompression("gzip", sarama.CompressionGZIP),
	"compression-snappy":  saramaCompression("snappy", sarama.CompressionSnappy),
	"compression-lz4":     saramaCompression("lz4", sarama.CompressionLZ4),
	"compression-zstd":    saramaCompression("zstd", sarama.CompressionZSTD),
	"group-classic":       saramaGroup,
	"admin":               saramaAdmin,
	"admin-alter-configs": saramaAlterConfigs,
	"transactions":        saramaTransactions,
}

// saramaConfig is sarama's default configuration (Version = sarama.DefaultVersion, as a
// user who only sets the bootstrap server gets it) with acks=all and short timeouts.
func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "compat-go-sarama"
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Timeout = 10 * time.Second
	c.Net.DialTimeout = 5 * time.Second
	c.Net.ReadTimeout = 15 * time.Second
	c.Net.WriteTimeout = 10 * time.Second
	c.Metadata.Retry.Max = 3
	c.Metadata.Retry.Backoff = 250 * time.Millisecond
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.MaxWaitTime = 250 * time.Millisecond
	return c
}

func saramaAdmin1(e env) (sarama.ClusterAdmin, error) {
	return sarama.NewClusterAdmin([]string{e.bootstrap}, saramaConfig())
}

func saramaCreateTopic(adm sarama.ClusterAdmin, topic string, parts int32, configs map[string]*string) error {
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: parts, ReplicationFactor: 1, ConfigEntries: configs}, false); err != nil {
		return fmt.Errorf("CreateTopic %s: %w", topic, err)
	}
	logf("created topic %s with %d partitions (rf 1)", topic, parts)
	return nil
}

func saramaMessages(topic string, n int, withHeaders bool) []*sarama.ProducerMessage {
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		m := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(keyOf(i)), Value: sarama.StringEncoder(valueOf(i))}
		for _, h := range headersOf(i, withHeaders) {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h[0]), Value: []byte(h[1])})
		}
		msgs[i] = m
	}
	return msgs
}

func saramaProduce(e env, cfg *sarama.Config, msgs []*sarama.ProducerMessage) (map[string]pos, error) {
	p, err := sarama.NewSyncProducer([]string{e.bootstrap}, cfg)
	if err != nil {
		return nil, fmt.Errorf("NewSyncProducer: %w", err)
	}
	defer p.Close()
	if err := p.SendMessages(msgs); err != nil {
		return nil, fmt.Errorf("SendMessages: %w", err)
	}
	where := map[string]pos{}
	for _, m := range msgs {
		k, _ := m.Key.Encode()
		where[string(k)] = pos{m.Partition, m.Offset}
	}
	logf("produced %d messages with acks=all (SyncProducer.SendMessages)", len(msgs))
	return where, nil
}

// saramaConsumeAll reads partitions 0..nparts-1 of topic from the oldest offset with a
// plain (groupless) sarama consumer until n messages arrived, plus a short linger.
func saramaConsumeAll(ctx context.Context, e env, topic string, nparts int32, n int) ([]rec, error) {
	c, err := sarama.NewConsumer([]string{e.bootstrap}, saramaConfig())
	if err != nil {
		return nil, fmt.Errorf("NewConsumer: %w", err)
	}
	defer c.Close()
	var mu sync.Mutex
	var out []rec
	var firstErr error
	var pcs []sarama.PartitionConsumer
	for p := int32(0); p < nparts; p++ {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, fmt.Errorf("ConsumePartition %d: %w", p, err)
		}
		pcs = append(pcs, pc)
		go func() {
			for m := range pc.Messages() {
				var hs [][2]string
				for _, h := range m.Headers {
					hs = append(hs, [2]string{string(h.Key), string(h.Value)})
				}
				mu.Lock()
				out = append(out, rec{key: string(m.Key), value: string(m.Value), headers: hs, partition: m.Partition, offset: m.Offset, codec: -1})
				mu.Unlock()
			}
		}()
		go func() {
			for e := range pc.Errors() {
				mu.Lock()
				if firstErr == nil {
					firstErr = e
				}
				mu.Unlock()
			}
		}()
	}
	defer func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
	}()
	err = waitFor(ctx, 30*time.Second, fmt.Sprintf("%d messages consumed", n), func() error {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil {
			return firstErr
		}
		if len(out) < n {
			return fmt.Errorf("%d so far", len(out))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	// Each partition consumer appends in offset order; make the order per partition stable.
	sort.SliceStable(out, func(i, j int) bool { return out[i].partition < out[j].partition })
	return append([]rec(nil), out...), firstErr
}

func saramaProduceConsume(ctx context.Context, e env) error {
	adm, err := saramaAdmin1(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	topic := uniq("pc")
	if err := saramaCreateTopic(adm, topic, 3, nil); err != nil {
		return err
	}
	where, err := saramaProduce(e, saramaConfig(), saramaMessages(topic, 300, true))
	if err != nil {
		return err
	}
	got, err := saramaConsumeAll(ctx, e, topic, 3, 300)
	if err != nil {
		return err
	}
	logf("consumed %d messages from the oldest offset with a groupless consumer (one PartitionConsumer per partition)", len(got))
	return verifyRecords(got, 300, 3, true, true, where)
}

func saramaCompression(name string, codec sarama.CompressionCodec) scenarioFn {
	return func(ctx context.Context, e env) error {
		adm, err := saramaAdmin1(e)
		if err != nil {
			return err
		}
		defer adm.Close()
		topic := uniq("z" + name)
		if err := saramaCreateTopic(adm, topic, 1, nil); err != nil {
			return err
		}
		cfg := saramaConfig()
		cfg.Producer.Compression = codec
		where, err := saramaProduce(e, cfg, saramaMessages(topic, 100, true))
		if err != nil {
			return err
		}
		got, err := saramaConsumeAll(ctx, e, topic, 1, 100)
		if err != nil {
			return err
		}
		if err := verifyRecords(got, 100, 1, true, true, where); err != nil {
			return err
		}
		return checkCodec(ctx, e.bootstrap, topic, 100, name)
	}
}

// saramaMember is one sarama ConsumerGroup with a background Consume loop.
type saramaMember struct {
	name   string
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	sess     sarama.ConsumerGroupSession
	assigned []int32
	recs     []rec
	err      error
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sess = s
	var ps []int32
	for _, v := range s.Claims() {
		ps = append(ps, v...)
	}
	m.assigned = sortedInts32(ps)
	return nil
}

func (m *saramaMember) Cleanup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sess = nil
	m.assigned = nil
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.mu.Lock()
		m.recs = append(m.recs, rec{key: string(msg.Key), value: string(msg.Value), partition: msg.Partition, offset: msg.Offset})
		m.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

func (m *saramaMember) state() ([]int32, []rec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int32(nil), m.assigned...), append([]rec(nil), m.recs...), m.err
}

func newSaramaMember(ctx context.Context, e env, name, group, topic string) (*saramaMember, error) {
	cfg := saramaConfig()
	cfg.ClientID = name
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = time.Second
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	g, err := sarama.NewConsumerGroup([]string{e.bootstrap}, group, cfg)
	if err != nil {
		return nil, fmt.Errorf("NewConsumerGroup: %w", err)
	}
	m := &saramaMember{name: name, group: g, done: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go func() {
		for err := range g.Errors() {
			m.mu.Lock()
			if m.err == nil {
				m.err = fmt.Errorf("%s: %w", name, err)
			}
			m.mu.Unlock()
		}
	}()
	go func() {
		defer close(m.done)
		for cctx.Err() == nil {
			if err := g.Consume(cctx, []string{topic}, m); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				m.mu.Lock()
				if m.err == nil {
					m.err = fmt.Errorf("%s Consume: %w", name, err)
				}
				m.mu.Unlock()
				return
			}
		}
	}()
	return m, nil
}

func (m *saramaMember) close() error {
	m.cancel()
	err := m.group.Close()
	select {
	case <-m.done:
	case <-time.After(15 * time.Second):
		return fmt.Errorf("%s: Consume loop did not stop within 15 s of Close", m.name)
	}
	return err
}

func saramaGroup(ctx context.Context, e env) error {
	adm, err := saramaAdmin1(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	topic, group := uniq("grp"), uniq("g")
	if err := saramaCreateTopic(adm, topic, 4, nil); err != nil {
		return err
	}
	a, err := newSaramaMember(ctx, e, "member-a", group, topic)
	if err != nil {
		return err
	}
	defer a.close()
	b, err := newSaramaMember(ctx, e, "member-b", group, topic)
	if err != nil {
		return err
	}
	bClosed := false
	defer func() {
		if !bClosed {
			b.close()
		}
	}()
	logf("started two ConsumerGroup members in group %s on 4-partition topic %s", group, topic)
	var pa, pb []int32
	if err := waitFor(ctx, 60*time.Second, "both members own 2 partitions", func() error {
		var ea, eb error
		pa, _, ea = a.state()
		pb, _, eb = b.state()
		if ea != nil {
			return ea
		}
		if eb != nil {
			return eb
		}
		if len(pa) != 2 || len(pb) != 2 {
			return fmt.Errorf("member-a owns %v, member-b owns %v", pa, pb)
		}
		return nil
	}); err != nil {
		return err
	}
	logf("assignment: member-a %v, member-b %v", pa, pb)
	if _, err := saramaProduce(e, saramaConfig(), saramaMessages(topic, 200, false)); err != nil {
		return err
	}
	if err := waitFor(ctx, 30*time.Second, "200 records consumed by the two members", func() error {
		_, ra, ea := a.state()
		_, rb, eb := b.state()
		if ea != nil {
			return ea
		}
		if eb != nil {
			return eb
		}
		if len(ra)+len(rb) < 200 {
			return fmt.Errorf("%d + %d records so far", len(ra), len(rb))
		}
		return nil
	}); err != nil {
		return err
	}
	time.Sleep(time.Second)
	_, ra, _ := a.state()
	_, rb, _ := b.state()
	logf("member-a consumed %d messages, member-b %d", len(ra), len(rb))
	for _, x := range []struct {
		name string
		rs   []rec
		ps   []int32
	}{{"member-a", ra, pa}, {"member-b", rb, pb}} {
		own := map[int32]bool{}
		for _, p := range x.ps {
			own[p] = true
		}
		for _, r := range x.rs {
			if !own[r.partition] {
				return fmt.Errorf("%s consumed %s from partition %d which it does not own (%v)", x.name, r.key, r.partition, x.ps)
			}
		}
	}
	all := append(append([]rec(nil), ra...), rb...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].partition < all[j].partition })
	if err := verifyRecords(all, 200, 4, false, true, nil); err != nil {
		return err
	}
	ends := map[int32]int64{}
	for _, r := range all {
		ends[r.partition] = max(ends[r.partition], r.offset+1)
	}
	for _, m := range []*saramaMember{a, b} {
		m.mu.Lock()
		s := m.sess
		m.mu.Unlock()
		if s == nil {
			return fmt.Errorf("%s has no session to commit with", m.name)
		}
		s.Commit()
	}
	logf("both members committed (MarkMessage + session.Commit)")
	resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2, 3}})
	if err != nil {
		return fmt.Errorf("ListConsumerGroupOffsets: %w", err)
	}
	var sum int64
	for p := int32(0); p < 4; p++ {
		blk := resp.GetBlock(topic, p)
		if blk == nil || blk.Err != sarama.ErrNoError {
			return fmt.Errorf("committed offset for partition %d: %+v", p, blk)
		}
		if blk.Offset != ends[p] {
			return fmt.Errorf("committed offset for partition %d is %d, want %d", p, blk.Offset, ends[p])
		}
		sum += blk.Offset
	}
	if err := eq("sum of committed offsets", sum, int64(200)); err != nil {
		return err
	}
	logf("committed offsets (ClusterAdmin.ListConsumerGroupOffsets) %s sum to 200", fmtCounts(ends))
	gd, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(gd) != 1 {
		return fmt.Errorf("DescribeConsumerGroups: %v (%d groups)", err, len(gd))
	}
	if gd[0].State != "Stable" || len(gd[0].Members) != 2 || gd[0].ProtocolType != "consumer" || gd[0].Protocol != "range" {
		return fmt.Errorf("DescribeConsumerGroups: state %q, %d members, protocol %s/%s; want Stable, 2, consumer/range", gd[0].State, len(gd[0].Members), gd[0].ProtocolType, gd[0].Protocol)
	}
	logf("DescribeConsumerGroups: Stable, 2 members, consumer/range")

	if err := b.close(); err != nil {
		return fmt.Errorf("closing member-b: %w", err)
	}
	bClosed = true
	logf("closed member-b (leaves the group)")
	if err := waitFor(ctx, 60*time.Second, "member-a owns all 4 partitions", func() error {
		got, _, err := a.state()
		if err != nil {
			return err
		}
		if len(got) != 4 {
			return fmt.Errorf("member-a owns %v", got)
		}
		return nil
	}); err != nil {
		return err
	}
	logf("rebalance gave member-a all 4 partitions")
	time.Sleep(2 * time.Second)
	_, ra2, err := a.state()
	if err != nil {
		return err
	}
	if len(ra2) != len(ra) {
		return fmt.Errorf("member-a consumed %d more messages after the rebalance; all were committed, want 0", len(ra2)-len(ra))
	}
	logf("member-a got no message again after the rebalance")
	return nil
}

func saramaAdmin(ctx context.Context, e env) error {
	cfg := saramaConfig()
	client, err := sarama.NewClient([]string{e.bootstrap}, cfg)
	if err != nil {
		return fmt.Errorf("NewClient: %w", err)
	}
	defer client.Close()
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return fmt.Errorf("NewClusterAdminFromClient: %w", err)
	}

	brokers, controller, err := adm.DescribeCluster()
	if err != nil {
		return fmt.Errorf("DescribeCluster: %w", err)
	}
	if len(brokers) != 1 || brokers[0].ID() != 0 || brokers[0].Addr() != e.bootstrap || controller != 0 {
		return fmt.Errorf("DescribeCluster: %d brokers (first id %d addr %s), controller %d; want node 0 at %s, controller 0", len(brokers), brokers[0].ID(), brokers[0].Addr(), controller, e.bootstrap)
	}
	logf("DescribeCluster: one broker, node 0 at %s, controller 0", e.bootstrap)
	b0, err := client.Broker(0)
	if err != nil {
		return fmt.Errorf("client.Broker(0): %w", err)
	}
	av, err := b0.ApiVersions(&sarama.ApiVersionsRequest{})
	if err != nil || av.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions: %v (code %d)", err, av.ErrorCode)
	}
	keys := map[int16]bool{}
	for _, k := range av.ApiKeys {
		keys[k.ApiKey] = true
	}
	for _, k := range []int16{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 32, 37, 42} {
		if !keys[k] {
			return fmt.Errorf("ApiVersions lacks key %d", k)
		}
	}
	logf("ApiVersions: %d API keys", len(av.ApiKeys))

	t1, t2 := uniq("adm1"), uniq("adm2")
	retention := "3600000"
	if err := saramaCreateTopic(adm, t1, 2, map[string]*string{"retention.ms": &retention}); err != nil {
		return err
	}
	if err := saramaCreateTopic(adm, t2, 1, nil); err != nil {
		return err
	}
	err = adm.CreateTopic(t2, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("creating %s again: got %v, want ErrTopicAlreadyExists", t2, err)
	}
	logf("CreateTopic again: %v", err)
	tl, err := adm.ListTopics()
	if err != nil {
		return fmt.Errorf("ListTopics: %w", err)
	}
	d1, ok1 := tl[t1]
	_, ok2 := tl[t2]
	if !ok1 || !ok2 {
		return fmt.Errorf("ListTopics lacks %s or %s", t1, t2)
	}
	if d1.NumPartitions != 2 || d1.ReplicationFactor != 1 || d1.ConfigEntries["retention.ms"] == nil || *d1.ConfigEntries["retention.ms"] != retention {
		return fmt.Errorf("ListTopics %s: %d partitions rf %d retention.ms %v; want 2, 1, %s", t1, d1.NumPartitions, d1.ReplicationFactor, d1.ConfigEntries["retention.ms"], retention)
	}
	logf("ListTopics: both listed; %s has 2 partitions, rf 1, retention.ms=%s", t1, retention)
	md, err := adm.DescribeTopics([]string{t1})
	if err != nil || len(md) != 1 {
		return fmt.Errorf("DescribeTopics: %v", err)
	}
	if md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 2 {
		return fmt.Errorf("DescribeTopics %s: err %v, %d partitions", t1, md[0].Err, len(md[0].Partitions))
	}
	for _, p := range md[0].Partitions {
		if p.Leader != 0 || fmt.Sprint(p.Replicas) != "[0]" || fmt.Sprint(p.Isr) != "[0]" || p.Err != sarama.ErrNoError {
			return fmt.Errorf("partition %d: leader %d replicas %v isr %v err %v", p.ID, p.Leader, p.Replicas, p.Isr, p.Err)
		}
	}
	logf("DescribeTopics %s: 2 partitions, leader 0, replicas [0], isr [0]", t1)
	ces, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: t1})
	if err != nil {
		return fmt.Errorf("DescribeConfig: %w", err)
	}
	found := false
	for _, c := range ces {
		if c.Name == "retention.ms" {
			found = true
			if c.Value != retention || c.Source != sarama.SourceTopic {
				return fmt.Errorf("DescribeConfig retention.ms = %q (source %v), want %s (topic)", c.Value, c.Source, retention)
			}
		}
	}
	if !found {
		return fmt.Errorf("DescribeConfig %s has no retention.ms among %d entries", t1, len(ces))
	}
	logf("DescribeConfig: retention.ms = %s (source topic)", retention)
	if err := adm.CreatePartitions(t1, 3, nil, false); err != nil {
		return fmt.Errorf("CreatePartitions %s to 3: %w", t1, err)
	}
	if err := waitFor(ctx, 10*time.Second, "3 partitions", func() error {
		md, err := adm.DescribeTopics([]string{t1})
		if err != nil {
			return err
		}
		if len(md) != 1 || len(md[0].Partitions) != 3 {
			return fmt.Errorf("not yet")
		}
		return nil
	}); err != nil {
		return err
	}
	logf("CreatePartitions: %s now has 3 partitions", t1)

	// Offsets by time: 5 messages, one request each, timestamps base+0s..base+4s.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	pcfg := saramaConfig()
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	for i := 0; i < 5; i++ {
		m := &sarama.ProducerMessage{Topic: t2, Partition: 0, Key: sarama.StringEncoder(keyOf(i)), Value: sarama.StringEncoder(valueOf(i)), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if _, err := saramaProduce(e, pcfg, []*sarama.ProducerMessage{m}); err != nil {
			return err
		}
	}
	oldest, err1 := client.GetOffset(t2, 0, sarama.OffsetOldest)
	newest, err2 := client.GetOffset(t2, 0, sarama.OffsetNewest)
	byTime, err3 := client.GetOffset(t2, 0, base.Add(2*time.Second).UnixMilli())
	after, err4 := client.GetOffset(t2, 0, base.Add(time.Minute).UnixMilli())
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("GetOffset: %w", err)
	}
	if oldest != 0 || newest != 5 || byTime != 2 || after != -1 {
		return fmt.Errorf("GetOffset: oldest %d newest %d by-time %d after-last %d; want 0, 5, 2, -1", oldest, newest, byTime, after)
	}
	logf("ListOffsets (client.GetOffset): oldest 0, newest 5, by timestamp of record 2 -> 2, after the last record -> -1")

	// Groups: commit with an OffsetManager (no members), list, describe, delete.
	group := uniq("admg")
	om, err := sarama.NewOffsetManagerFromClient(group, client)
	if err != nil {
		return fmt.Errorf("NewOffsetManagerFromClient: %w", err)
	}
	pom, err := om.ManagePartition(t2, 0)
	if err != nil {
		return fmt.Errorf("ManagePartition: %w", err)
	}
	pom.MarkOffset(3, "m3")
	om.Commit()
	pom.Close()
	om.Close()
	ocr, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{t2: {0}})
	if err != nil {
		return fmt.Errorf("ListConsumerGroupOffsets: %w", err)
	}
	if blk := ocr.GetBlock(t2, 0); blk == nil || blk.Err != sarama.ErrNoError || blk.Offset != 3 || blk.Metadata != "m3" {
		return fmt.Errorf("ListConsumerGroupOffsets %s: %+v, want offset 3 metadata m3", group, blk)
	}
	logf("OffsetManager commit then ListConsumerGroupOffsets: %s/0 = 3 (metadata m3)", t2)
	groups, err := adm.ListConsumerGroups()
	if err != nil {
		return fmt.Errorf("ListConsumerGroups: %w", err)
	}
	if _, ok := groups[group]; !ok {
		return fmt.Errorf("ListConsumerGroups lacks %s: %v", group, groups)
	}
	gd, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(gd) != 1 {
		return fmt.Errorf("DescribeConsumerGroups: %v", err)
	}
	if gd[0].Err != sarama.ErrNoError || gd[0].State != "Empty" || len(gd[0].Members) != 0 {
		return fmt.Errorf("DescribeConsumerGroups %s: err %v state %q members %d; want Empty, 0", group, gd[0].Err, gd[0].State, len(gd[0].Members))
	}
	logf("ListConsumerGroups lists %s; DescribeConsumerGroups: Empty, no members", group)
	if err := adm.DeleteConsumerGroup(group); err != nil {
		return fmt.Errorf("DeleteConsumerGroup: %w", err)
	}
	groups, err = adm.ListConsumerGroups()
	if err != nil {
		return fmt.Errorf("ListConsumerGroups: %w", err)
	}
	if _, ok := groups[group]; ok {
		return fmt.Errorf("ListConsumerGroups still lists %s after DeleteConsumerGroup", group)
	}
	logf("DeleteConsumerGroup: %s gone", group)

	for _, t := range []string{t1, t2} {
		if err := adm.DeleteTopic(t); err != nil {
			return fmt.Errorf("DeleteTopic %s: %w", t, err)
		}
	}
	if err := waitFor(ctx, 10*time.Second, "deleted topics gone", func() error {
		tl, err := adm.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := tl[t1]; ok {
			return fmt.Errorf("%s still listed", t1)
		}
		if _, ok := tl[t2]; ok {
			return fmt.Errorf("%s still listed", t2)
		}
		return nil
	}); err != nil {
		return err
	}
	logf("DeleteTopic: both topics gone from ListTopics")
	return nil
}

func saramaAlterConfigs(ctx context.Context, e env) error {
	adm, err := saramaAdmin1(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	t1 := uniq("cfg")
	retention := "3600000"
	if err := saramaCreateTopic(adm, t1, 1, map[string]*string{"retention.ms": &retention}); err != nil {
		return err
	}
	get := func() (string, error) {
		ces, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: t1})
		if err != nil {
			return "", fmt.Errorf("DescribeConfig: %w", err)
		}
		for _, c := range ces {
			if c.Name == "retention.ms" {
				return c.Value, nil
			}
		}
		return "", fmt.Errorf("no retention.ms")
	}
	newRet := "7200000"
	t0 := time.Now()
	err = adm.IncrementalAlterConfig(sarama.TopicResource, t1, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &newRet},
	}, false)
	if e.notYet {
		if err == nil {
			return fmt.Errorf("IncrementalAlterConfig succeeded: issue 10 may have landed, make this cell expect pass")
		}
		if !errors.Is(err, sarama.ErrUnsupportedVersion) || time.Since(t0) > 10*time.Second {
			return fmt.Errorf("IncrementalAlterConfig failed after %.1fs with %v, want ErrUnsupportedVersion within 10 s", time.Since(t0).Seconds(), err)
		}
		logf("IncrementalAlterConfig failed after %.2fs: %v", time.Since(t0).Seconds(), err)
		v, err := get()
		if err != nil {
			return err
		}
		if v != retention {
			return fmt.Errorf("retention.ms = %s, want unchanged %s", v, retention)
		}
		logf("retention.ms still %s", retention)
		return nil
	}
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfig: %w", err)
	}
	v, err := get()
	if err != nil {
		return err
	}
	if v != newRet {
		return fmt.Errorf("after IncrementalAlterConfig retention.ms = %s, want %s", v, newRet)
	}
	logf("IncrementalAlterConfig: retention.ms now %s", newRet)
	return nil
}

func saramaTransactions(ctx context.Context, e env) error {
	topic := uniq("txn")
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = uniq("tid")
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 3
	if e.notYet {
		t0 := time.Now()
		p, err := sarama.NewSyncProducer([]string{e.bootstrap}, cfg)
		el := time.Since(t0)
		if err == nil {
			p.Close()
			return fmt.Errorf("NewSyncProducer with a transactional id succeeded: issue 12 may have landed, make this cell expect pass")
		}
		if !errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed) || el > 15*time.Second {
			return fmt.Errorf("NewSyncProducer (InitProducerId) failed after %.1fs with %v; want ErrTransactionalIDAuthorizationFailed within 15 s", el.Seconds(), err)
		}
		logf("NewSyncProducer with a transactional id failed after %.2fs: %v", el.Seconds(), err)
		return nil
	}
	adm, err := saramaAdmin1(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := saramaCreateTopic(adm, topic, 1, nil); err != nil {
		return err
	}
	p, err := sarama.NewSyncProducer([]string{e.bootstrap}, cfg)
	if err != nil {
		return fmt.Errorf("NewSyncProducer: %w", err)
	}
	defer p.Close()
	for round, commit := range []bool{true, false, true} {
		if err := p.BeginTxn(); err != nil {
			return fmt.Errorf("BeginTxn %d: %w", round, err)
		}
		var msgs []*sarama.ProducerMessage
		for i := 0; i < 10; i++ {
			n := round*10 + i
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(keyOf(n)), Value: sarama.StringEncoder(valueOf(n))})
		}
		if err := p.SendMessages(msgs); err != nil {
			return fmt.Errorf("SendMessages %d: %w", round, err)
		}
		if commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			return fmt.Errorf("end txn %d: %w", round, err)
		}
	}
	logf("3 transactions of 10 messages: committed, aborted, committed")
	ccfg := saramaConfig()
	ccfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c, err := sarama.NewConsumer([]string{e.bootstrap}, ccfg)
	if err != nil {
		return err
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		return err
	}
	defer pc.Close()
	var got []string
	timeout := time.After(20 * time.Second)
	for len(got) < 20 {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Key))
		case <-timeout:
			return fmt.Errorf("read_committed consumer got %d of 20 messages", len(got))
		}
	}
	for i, k := range got {
		n := i
		if i >= 10 {
			n += 10
		}
		if k != keyOf(n) {
			return fmt.Errorf("read_committed message %d has key %s, want %s", i, k, keyOf(n))
		}
	}
	logf("read_committed consumer saw exactly k0..k9, k20..k29")
	return nil
}
