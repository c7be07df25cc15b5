package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var start = time.Now()

// logf prints one line of the human-readable account, prefixed with the elapsed time.
func logf(format string, args ...any) {
	fmt.Printf("[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

// uniq returns a topic/group name unique to this run.
func uniq(prefix string) string {
	return fmt.Sprintf("compat-go-%s-%d-%04d", prefix, time.Now().UnixMilli()%100000000, rand.IntN(10000))
}

// rec is one consumed record as every client sees it, in the order it was consumed.
type rec struct {
	key, value string
	headers    [][2]string
	partition  int32
	offset     int64
	codec      int8 // batch compression codec if the client reports it, else -1
}

// pos is where a record was written, when the producing client reports it.
type pos struct {
	partition int32
	offset    int64
}

func keyOf(i int) string   { return "k" + strconv.Itoa(i) }
func valueOf(i int) string { return "v" + strconv.Itoa(i) }

// headersOf returns the headers record i carries: every third record has two headers.
func headersOf(i int, withHeaders bool) [][2]string {
	if !withHeaders || i%3 != 0 {
		return nil
	}
	return [][2]string{{"h-index", strconv.Itoa(i)}, {"h-kind", "compat"}}
}

func keyIndex(key string) (int, bool) {
	if !strings.HasPrefix(key, "k") {
		return 0, false
	}
	n, err := strconv.Atoi(key[1:])
	return n, err == nil
}

// verifyRecords checks that got holds exactly the n records k0..k<n-1> with values v<i>,
// the expected headers (if withHeaders), each exactly once; that each partition's records
// came in offset order 0,1,2,... without gaps and in production order (key index increasing);
// that the records are spread over exactly nparts partitions (every partition non-empty
// when spread is true); and, when where is non-nil, that each record sits at the
// partition/offset the producer reported.
func verifyRecords(got []rec, n int, nparts int, withHeaders bool, spread bool, where map[string]pos) error {
	if len(got) != n {
		return fmt.Errorf("consumed %d records, want exactly %d", len(got), n)
	}
	seen := make(map[int]bool, n)
	lastIdx := map[int32]int{}
	nextOff := map[int32]int64{}
	for _, r := range got {
		i, ok := keyIndex(r.key)
		if !ok || i < 0 || i >= n {
			return fmt.Errorf("unexpected key %q", r.key)
		}
		if seen[i] {
			return fmt.Errorf("key %q consumed twice", r.key)
		}
		seen[i] = true
		if r.value != valueOf(i) {
			return fmt.Errorf("key %q has value %q, want %q", r.key, r.value, valueOf(i))
		}
		wantH := headersOf(i, withHeaders)
		if len(r.headers) != len(wantH) {
			return fmt.Errorf("key %q has headers %v, want %v", r.key, r.headers, wantH)
		}
		for j := range wantH {
			if r.headers[j] != wantH[j] {
				return fmt.Errorf("key %q has headers %v, want %v", r.key, r.headers, wantH)
			}
		}
		if r.partition < 0 || int(r.partition) >= nparts {
			return fmt.Errorf("key %q in partition %d, topic has %d", r.key, r.partition, nparts)
		}
		if r.offset != nextOff[r.partition] {
			return fmt.Errorf("key %q at partition %d offset %d, want offset %d (offsets must be 0,1,2,... per partition)", r.key, r.partition, r.offset, nextOff[r.partition])
		}
		nextOff[r.partition]++
		if last, ok := lastIdx[r.partition]; ok && i <= last {
			return fmt.Errorf("partition %d order broken: k%d after k%d", r.partition, i, last)
		}
		lastIdx[r.partition] = i
		if where != nil {
			w, ok := where[r.key]
			if !ok {
				return fmt.Errorf("key %q was not reported by the producer", r.key)
			}
			if w.partition != r.partition || w.offset != r.offset {
				return fmt.Errorf("key %q produced to %d@%d but consumed from %d@%d", r.key, w.partition, w.offset, r.partition, r.offset)
			}
		}
	}
	if spread {
		for p := 0; p < nparts; p++ {
			if nextOff[int32(p)] == 0 {
				return fmt.Errorf("partition %d got no records (per-partition counts %v)", p, nextOff)
			}
		}
	}
	logf("verified %d records: every key once, values%s exact, per-partition offsets contiguous and in production order; per-partition counts %s",
		n, map[bool]string{true: "/headers", false: ""}[withHeaders], fmtCounts(nextOff))
	return nil
}

func fmtCounts(m map[int32]int64) string {
	var ps []int
	for p := range m {
		ps = append(ps, int(p))
	}
	sort.Ints(ps)
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("p%d=%d", p, m[int32(p)]))
	}
	return strings.Join(parts, " ")
}

// kgoFetchAll reads every record of topic (nparts partitions) from the beginning with a
// plain (groupless) franz-go consumer until n records arrived, then lingers briefly to
// catch any extra record. It is used to inspect batches written by the other clients
// (compression codec attribute).
func kgoFetchAll(ctx context.Context, bootstrap, topic string, n int, linger time.Duration) ([]rec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return kgoPoll(ctx, cl, n, linger)
}

func kgoPoll(ctx context.Context, cl *kgo.Client, n int, linger time.Duration) ([]rec, error) {
	var out []rec
	deadline := time.Now().Add(30 * time.Second)
	var extraUntil time.Time
	for {
		now := time.Now()
		if len(out) >= n {
			if extraUntil.IsZero() {
				extraUntil = now.Add(linger)
			}
			if now.After(extraUntil) {
				return out, nil
			}
		} else if now.After(deadline) {
			return out, fmt.Errorf("timed out after 30 s with %d of %d records consumed", len(out), n)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		for _, e := range fs.Errors() {
			if e.Err == context.DeadlineExceeded || e.Err == context.Canceled {
				continue
			}
			return out, fmt.Errorf("fetch error on %s/%d: %w", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var hs [][2]string
			for _, h := range r.Headers {
				hs = append(hs, [2]string{h.Key, string(h.Value)})
			}
			out = append(out, rec{key: string(r.Key), value: string(r.Value), headers: hs,
				partition: r.Partition, offset: r.Offset, codec: int8(r.Attrs.CompressionType())})
		})
	}
}

var codecIDs = map[string]int8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// checkCodec verifies (via franz-go, which exposes each record's batch attributes) that
// every stored batch of topic carries the given compression codec, as Kafka keeps the
// producer's codec with compression.type=producer.
func checkCodec(ctx context.Context, bootstrap, topic string, n int, codec string) error {
	recs, err := kgoFetchAll(ctx, bootstrap, topic, n, 300*time.Millisecond)
	if err != nil {
		return fmt.Errorf("re-reading with franz-go to check the codec: %w", err)
	}
	if len(recs) != n {
		return fmt.Errorf("re-read %d records, want %d", len(recs), n)
	}
	want := codecIDs[codec]
	for _, r := range recs {
		if r.codec != want {
			return fmt.Errorf("record %s@%d/%d is stored in a batch with codec %d, want %d (%s)", r.key, r.partition, r.offset, r.codec, want, codec)
		}
	}
	logf("all %d records are stored in batches whose attributes say codec %d (%s)", n, want, codec)
	return nil
}

// waitFor polls cond every 100 ms until it returns nil or d passes.
func waitFor(ctx context.Context, d time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached within %s: %w", what, d, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func eq[T comparable](what string, got, want T) error {
	if got != want {
		return fmt.Errorf("%s: got %v, want %v", what, got, want)
	}
	return nil
}

func sortedInts32(s []int32) []int32 {
	out := append([]int32(nil), s...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func fmtParts(s []int32) string {
	return fmt.Sprint(sortedInts32(s))
}
