#!/usr/bin/env python3
"""Seed corpora for the fuzzers from real client traffic (issue 11).

    fuzz/capture.py --regenerate [--broker target/release/shardlog] [--compat DIR]

runs each cell of CELLS below (the compatibility runners of tests/compat: kafka-python,
aiokafka, confluent-kafka/librdkafka, kcat, the Java client 4.4.0 and 3.9.2, Kafka
Streams, Apache Kafka's CLI tools) against a fresh shardlog through a TCP proxy on
127.0.0.1 that records every client connection's client->broker bytes, whole frames
only. Nothing is rewritten: the broker runs with `--advertised-listener` set to the
proxy's address, so Metadata and FindCoordinator send the clients back through it.
Then it replaces fuzz/seeds/ with:

  frames/     one file per distinct client connection: its request frames as sent
              (4-byte length, header, body), cut at a frame boundary under 64 KiB
              (a longer connection gives several files); input of the `frames` target
  dispatch/   one file per cell: the frames of all the cell's connections in the order
              the proxy received them (CreateTopics, Produce, JoinGroup, OffsetCommit,
              Fetch... of one scenario against one broker), with runs of identical
              polls (Fetch, Heartbeat, ConsumerGroupHeartbeat) cut so that the
              `dispatch` target, which waits up to 200 ms on each long poll, stays fast
  batches/    the `records` bytes of every Produce partition (one or more record
              batches as the client built them: gzip, snappy, lz4, zstd, idempotent),
              deduplicated; input of the `batches` target
  MANIFEST    one line per file: path, size, frame count, API keys seen; the test
              tests/fuzz_seeds.rs checks the files against it

scripts/fuzz passes fuzz/seeds/<target> to cargo fuzz as a second corpus dir (read
only; new inputs still go to fuzz/corpus/<target>).

--compat DIR is a tests/compat directory whose families have been set up
(tests/compat/*/setup: their .cache/ holds the venv, jars and compiled Java client);
by default this checkout's. The brokers' data dirs go under $TMPDIR. --only SUBSTRING runs the matching cells only (for a
quick look; --regenerate with --only writes only those cells' seeds). Python 3
standard library only.
"""
import argparse
import collections
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(HERE)
SEEDS = os.path.join(HERE, "seeds")

MAX_SEED = 64 << 10          # bytes per seed file
MAX_TOTAL = 2 << 20          # bytes of the whole committed set (checked, not enforced)
MAX_CHUNKS_PER_CONN = 3      # a long connection (a perf producer) gives at most this many
MAX_BATCHES_PER_CELL = 6     # distinct record batches kept per cell
# Requests a client repeats while it waits (long polls, heartbeats): in a dispatch seed
# a run of the same (api, version) from one connection keeps at most this many.
POLL_APIS = {1: "Fetch", 12: "Heartbeat", 68: "ConsumerGroupHeartbeat", 3: "Metadata"}
MAX_POLL_RUN = 2

# (family, client, version, scenario). The families are tests/compat/<family>/run.
CELLS = [
    ("python", "confluent-kafka", "2.16.1", "produce-consume"),
    ("python", "confluent-kafka", "2.16.1", "compression-gzip"),
    ("python", "confluent-kafka", "2.16.1", "compression-snappy"),
    ("python", "confluent-kafka", "2.16.1", "compression-lz4"),
    ("python", "confluent-kafka", "2.16.1", "compression-zstd"),
    ("python", "confluent-kafka", "2.16.1", "group-classic"),
    ("python", "confluent-kafka", "2.16.1", "group-consumer"),
    ("python", "confluent-kafka", "2.16.1", "admin"),
    ("python", "confluent-kafka", "2.16.1", "admin-alter-configs"),
    ("python", "confluent-kafka", "2.16.1", "admin-delete-records"),
    ("python", "confluent-kafka", "2.16.1", "transactions"),
    ("python", "kafka-python", "3.0.12", "produce-consume"),
    ("python", "kafka-python", "3.0.12", "compression-gzip"),
    ("python", "kafka-python", "3.0.12", "compression-snappy"),
    ("python", "kafka-python", "3.0.12", "compression-lz4"),
    ("python", "kafka-python", "3.0.12", "compression-zstd"),
    ("python", "kafka-python", "3.0.12", "group-classic"),
    ("python", "kafka-python", "3.0.12", "admin"),
    ("python", "kafka-python", "3.0.12", "admin-alter-configs"),
    ("python", "kafka-python", "3.0.12", "admin-delete-records"),
    ("python", "aiokafka", "0.14.0", "produce-consume"),
    ("python", "aiokafka", "0.14.0", "group-classic"),
    ("python", "aiokafka", "0.14.0", "admin"),
    ("python", "aiokafka", "0.14.0", "admin-alter-configs"),    # legacy AlterConfigs
    ("python", "kcat", "1.7.1", "produce-consume"),
    ("python", "kcat", "1.7.1", "compression-zstd"),
    ("python", "kcat", "1.7.1", "metadata"),
    ("java", "kafka-clients", "4.4.0", "produce-consume"),
    ("java", "kafka-clients", "4.4.0", "compression-gzip"),
    ("java", "kafka-clients", "4.4.0", "compression-snappy"),
    ("java", "kafka-clients", "4.4.0", "compression-lz4"),
    ("java", "kafka-clients", "4.4.0", "compression-zstd"),
    ("java", "kafka-clients", "4.4.0", "group-classic"),
    ("java", "kafka-clients", "4.4.0", "group-consumer"),
    ("java", "kafka-clients", "4.4.0", "group-consumer-regex"),
    ("java", "kafka-clients", "4.4.0", "admin"),
    ("java", "kafka-clients", "4.4.0", "admin-alter-configs"),
    ("java", "kafka-clients", "4.4.0", "admin-log-dirs"),
    ("java", "kafka-clients", "4.4.0", "transactions"),
    ("java", "kafka-clients", "3.9.2", "produce-consume"),
    ("java", "kafka-clients", "3.9.2", "group-classic"),
    ("java", "kafka-streams", "4.4.0", "streams-wordcount"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-topics"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-console"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-consumer-groups"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-consumer-groups-kip848"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-offsets-topic"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-configs"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-broker-api-versions"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-get-offsets"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-delete-records"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-log-dirs"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-verifiable"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-transactions"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-metadata-quorum"),
    ("kafka-cli", "kafka-tools", "4.4.0", "cli-reassign-execute"),
]

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
    9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
    13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
    17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics",
    21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
    24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit",
    29: "DescribeAcls", 32: "DescribeConfigs", 33: "AlterConfigs", 35: "DescribeLogDirs",
    37: "CreatePartitions", 42: "DeleteGroups", 44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments", 46: "ListPartitionReassignments",
    47: "OffsetDelete", 48: "DescribeClientQuotas", 49: "AlterClientQuotas",
    50: "DescribeUserScramCredentials", 55: "DescribeQuorum", 60: "DescribeCluster",
    61: "DescribeProducers", 65: "DescribeTransactions", 66: "ListTransactions",
    68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe", 71: "GetTelemetrySubscriptions",
    72: "PushTelemetry", 75: "DescribeTopicPartitions",
}


def log(msg):
    print(f"[capture] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the proxy ----------

class Recorder:
    """Every connection's whole request frames, tagged with the cell it belongs to."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cell = None
        self.next_conn = 0
        self.upstream = None    # the current broker's address
        self.frames = []        # (seq, cell, conn, frame bytes incl. length prefix)
        self.seq = 0

    def new_conn(self):
        with self.lock:
            self.next_conn += 1
            return self.next_conn, self.cell, self.upstream

    def add(self, cell, conn, frame):
        with self.lock:
            self.seq += 1
            self.frames.append((self.seq, cell, conn, frame))


def pump_requests(src, dst, rec, cell, conn):
    """client -> broker: forward as read, record each frame once it is whole."""
    buf = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            buf += data
            while len(buf) >= 4:
                size = int.from_bytes(buf[:4], "big", signed=True)
                if size < 0 or len(buf) < 4 + size:
                    break
                rec.add(cell, conn, buf[:4 + size])
                buf = buf[4 + size:]
    except OSError:
        pass
    finally:
        shut_both(dst, src)


def shut_both(*socks):
    """Shuts both directions of each socket, ignoring ones already gone."""
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def pump_responses(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        shut_both(dst, src)


def serve_proxy(listener, rec):
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        conn, cell, upstream = rec.new_conn()
        try:
            server = socket.create_connection(upstream)
        except OSError:
            client.close()
            continue
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump_requests, args=(client, server, rec, cell, conn),
                         daemon=True).start()
        threading.Thread(target=pump_responses, args=(server, client), daemon=True).start()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- the broker ---------

class Broker:
    def __init__(self, binary, port, advertised):
        self.data = tempfile.mkdtemp(prefix="shardlog-capture-")
        self.log = open(os.path.join(self.data, "broker.log"), "wb")
        # No metrics endpoint: a fixed port could be taken by a client's ephemeral port.
        self.proc = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{port}", "--advertised-listener", advertised,
             "--metrics-listen", "", "--data-dir", os.path.join(self.data, "d"),
             "--cores", "2"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        bad, rc = self.stop()
        raise RuntimeError(f"broker did not start (exit {rc}): {' | '.join(bad)[:300]}")

    def stop(self):
        """Stops the broker; returns the log lines at WARN or above."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        with open(os.path.join(self.data, "broker.log"), "rb") as f:
            text = f.read().decode("utf-8", "replace")
        shutil.rmtree(self.data, ignore_errors=True)
        bad = [ln for ln in text.splitlines() if " WARN " in ln or " ERROR " in ln
               or "panicked" in ln]
        return bad, self.proc.returncode


# ---------------------------------------------------------------- parsing ------------

class Reader:
    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, n):
        if n < 0 or self.p + n > len(self.b):
            raise ValueError("short")
        v = self.b[self.p:self.p + n]
        self.p += n
        return v

    def i16(self):
        return int.from_bytes(self.take(2), "big", signed=True)

    def i32(self):
        return int.from_bytes(self.take(4), "big", signed=True)

    def uvarint(self):
        shift = v = 0
        while True:
            c = self.take(1)[0]
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def header(frame):
    """(api key, version) of a frame (with its length prefix)."""
    return (int.from_bytes(frame[4:6], "big", signed=True),
            int.from_bytes(frame[6:8], "big", signed=True))


def produce_records(frame):
    """The records bytes of every partition of a Produce request (v3+), or []."""
    api, version = header(frame)
    if api != 0 or version < 3:
        return []
    flexible = version >= 9
    r = Reader(frame[4:])
    r.take(8)                                   # key, version, correlation id
    n = r.i16()
    if n > 0:
        r.take(n)                               # client id
    if flexible:
        r.tags()
    out = []
    try:
        if flexible:
            n = r.uvarint() - 1
            if n > 0:
                r.take(n)                       # transactional id
        else:
            n = r.i16()
            if n > 0:
                r.take(n)
        r.i16(), r.i32()                        # acks, timeout
        for _ in range((r.uvarint() - 1) if flexible else r.i32()):
            if version >= 13:
                r.take(16)                      # topic id
            elif flexible:
                r.take(r.uvarint() - 1)
            else:
                r.take(r.i16())
            for _ in range((r.uvarint() - 1) if flexible else r.i32()):
                r.i32()                         # partition index
                size = (r.uvarint() - 1) if flexible else r.i32()
                if size > 0:
                    out.append(r.take(size))
                if flexible:
                    r.tags()
            if flexible:
                r.tags()
    except ValueError:
        pass
    return out


CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def batch_kind(records):
    """codec and whether the batch has a producer id (idempotent/transactional)."""
    if len(records) < 61 or records[16] != 2:
        return "v%d" % (records[16] if len(records) > 16 else -1)
    attrs = int.from_bytes(records[21:23], "big")
    pid = int.from_bytes(records[43:51], "big", signed=True)
    return CODECS.get(attrs & 7, "codec?") + ("-idem" if pid >= 0 else "")


# ---------------------------------------------------------------- seeds --------------

def chunks(frames, limit=MAX_SEED):
    """Frames grouped into runs of at most `limit` bytes (a larger frame is skipped)."""
    out, cur, size, skipped = [], [], 0, 0
    for f in frames:
        if len(f) > limit:
            skipped += 1
            continue
        if size + len(f) > limit:
            out.append(cur)
            cur, size = [], 0
        cur.append(f)
        size += len(f)
    if cur:
        out.append(cur)
    return out, skipped


def without_poll_runs(frames_with_conn):
    """Drops the repeats past MAX_POLL_RUN of one connection's poll requests (same api
    and version, nothing else from that connection in between)."""
    out = []
    run = {}                                    # conn -> ((api, version), count)
    for conn, f in frames_with_conn:
        key = header(f)
        prev, count = run.get(conn, (None, 0))
        count = count + 1 if prev == key else 1
        run[conn] = (key, count)
        if key[0] in POLL_APIS and count > MAX_POLL_RUN:
            continue
        out.append(f)
    return out


def cell_name(cell):
    family, client, version, scenario = cell
    return f"{client}-{version}-{scenario}"


def write_seeds(rec, cells, out_dir):
    by_cell = collections.defaultdict(list)
    for seq, cell, conn, f in rec.frames:
        if cell is not None:
            by_cell[cell].append((seq, conn, f))
    for d in ("frames", "dispatch", "batches"):
        shutil.rmtree(os.path.join(out_dir, d), ignore_errors=True)
        os.makedirs(os.path.join(out_dir, d))
    manifest = []
    seen = set()
    skipped_big = 0
    batch_kinds = collections.Counter()

    def put(kind, name, data, nframes, apis):
        path = os.path.join(out_dir, kind, name)
        with open(path, "wb") as fh:
            fh.write(data)
        keys = ",".join(str(a) for a in sorted(apis)) if apis else "-"
        manifest.append(f"{kind}/{name} {len(data)} {nframes} {keys}")

    for cell in cells:
        name = cell_name(cell)
        frames = by_cell.get(cell, [])
        if not frames:
            log(f"{name}: no traffic captured")
            continue
        # frames/: each connection's stream; a connection whose (api, version) sequence
        # another connection of this cell already had is left out
        per_conn = collections.defaultdict(list)
        for seq, conn, f in frames:
            per_conn[conn].append(f)
        shapes = set()
        for i, (conn, fs) in enumerate(sorted(per_conn.items())):
            shape = tuple(header(f) for f in fs)
            if shape in shapes:
                continue
            shapes.add(shape)
            runs, skipped = chunks(fs)
            skipped_big += skipped
            for j, run in enumerate(runs[:MAX_CHUNKS_PER_CONN]):
                data = b"".join(run)
                h = hashlib.sha256(data).digest()
                if h in seen:
                    continue
                seen.add(h)
                put("frames", f"{name}.c{i:02d}.{j}", data, len(run),
                    {header(f)[0] for f in run})
        # dispatch/: the cell's frames in arrival order, poll repeats cut
        merged = without_poll_runs([(conn, f) for seq, conn, f in sorted(frames)])
        runs, _ = chunks(merged)
        for j, run in enumerate(runs[:MAX_CHUNKS_PER_CONN]):
            data = b"".join(run)
            put("dispatch", f"{name}.{j}", data, len(run), {header(f)[0] for f in run})
        # batches/: distinct record batches of the cell's Produce requests
        kept = 0
        for seq, conn, f in frames:
            for records in produce_records(f):
                if len(records) > MAX_SEED or kept >= MAX_BATCHES_PER_CELL:
                    continue
                h = hashlib.sha256(records).digest()
                if h in seen:
                    continue
                seen.add(h)
                kind = batch_kind(records)
                batch_kinds[kind] += 1
                put("batches", f"{name}.{kept}.{kind}", records, 0, ())
                kept += 1
    manifest.sort()
    with open(os.path.join(out_dir, "MANIFEST"), "w") as fh:
        fh.write("# fuzz/capture.py --regenerate: <path> <bytes> <frames> <api keys>\n")
        fh.write("\n".join(manifest) + "\n")
    total = sum(int(ln.split()[1]) for ln in manifest)
    counts = collections.Counter(ln.split("/")[0] for ln in manifest)
    log(f"seeds: {dict(counts)}, {total} bytes; frames over {MAX_SEED} B left out: "
        f"{skipped_big}; batches: {dict(batch_kinds)}")
    if total > MAX_TOTAL:
        log(f"WARNING: the seeds take {total} bytes, over {MAX_TOTAL}")


# ---------------------------------------------------------------- main ---------------

def run_cell(compat, cell, bootstrap, timeout):
    family, client, version, scenario = cell
    runner = os.path.join(compat, family, "run")
    cmd = [runner, "--bootstrap", bootstrap, "--client", client, "--version", version,
           "--scenario", scenario]
    started = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        lines = p.stdout.decode("utf-8", "replace").strip().splitlines()
        last = lines[-1] if lines else ""
        status = "ok" if p.returncode == 0 else f"rc={p.returncode}: {last[:200]}"
    except subprocess.TimeoutExpired:
        status = f"timeout after {timeout} s"
    return status, time.time() - started


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--regenerate", action="store_true",
                    help="run the cells and rewrite fuzz/seeds/")
    ap.add_argument("--broker", default=os.path.join(ROOT, "target", "release", "shardlog"))
    ap.add_argument("--compat", default=os.path.join(ROOT, "tests", "compat"))
    ap.add_argument("--only", default="", help="run only the cells whose name has this")
    ap.add_argument("--out", default=SEEDS, help="seed directory (default fuzz/seeds)")
    ap.add_argument("--timeout", type=int, default=150, help="seconds per cell")
    args = ap.parse_args()
    if not args.regenerate:
        ap.print_help()
        return 2
    cells = [c for c in CELLS if args.only in cell_name(c)]
    rec = Recorder()
    proxy_port = free_port()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", proxy_port))
    listener.listen(128)
    threading.Thread(target=serve_proxy, args=(listener, rec), daemon=True).start()
    bootstrap = f"127.0.0.1:{proxy_port}"
    log(f"proxy {bootstrap}; {len(cells)} cells, each against a fresh broker")
    report = []
    for cell in cells:
        try:
            broker_port = free_port()
            broker = Broker(args.broker, broker_port, bootstrap)
        except RuntimeError as e:
            log(f"{cell_name(cell)}: skipped, the broker did not start: {e}")
            report.append((cell, f"skipped: {e}", []))
            continue
        rec.cell, rec.upstream = cell, ("127.0.0.1", broker_port)
        status, took = run_cell(args.compat, cell, bootstrap, args.timeout)
        time.sleep(0.5)                         # the last frames in flight
        rec.cell = None
        bad, rc = broker.stop()
        n = sum(1 for x in rec.frames if x[1] == cell)
        conns = len({x[2] for x in rec.frames if x[1] == cell})
        log(f"{cell_name(cell)}: {status} ({took:.1f} s, {conns} connections, {n} frames,"
            f" broker exit {rc}, {len(bad)} warn/error log lines)")
        for ln in bad[:5]:
            log(f"    broker: {ln[:300]}")
        report.append((cell, status, bad))
    listener.close()
    write_seeds(rec, cells, args.out)
    failed = [cell_name(c) for c, s, _ in report if s != "ok"]
    if failed:
        log(f"cells that did not pass (their traffic is kept): {', '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
