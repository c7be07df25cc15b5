"""Shared helpers for the shardlog integration tests.

- `Broker`: the real `shardlog` binary as a child process (start / stop / kill9 / restart).
- raw Kafka wire helpers (just enough to send hand-made frames and read answers).
- deterministic record generation and "consume everything" helpers for
  confluent-kafka (librdkafka) and kafka-python.

Every loop here is bounded in time.
"""

from __future__ import annotations

import os
import random
import shlex
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

REPO_ROOT = Path(__file__).resolve().parents[2]

START_TIMEOUT_S = float(os.environ.get("SHARDLOG_TEST_START_TIMEOUT", "20"))
STOP_TIMEOUT_S = 30.0


# --------------------------------------------------------------------------------------
# The broker process
# --------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (bind port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_sockets(port: int) -> int:
    """How many TCP sockets listen on `port` (IPv4, any address), from /proc/net/tcp."""
    n = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
            n += 1
    return n


def shardlog_bin() -> Path:
    return Path(os.environ.get("SHARDLOG_BIN", REPO_ROOT / "target" / "release" / "shardlog"))


class BrokerError(AssertionError):
    pass


class Broker:
    """One shardlog process on a fixed port and data dir; can be restarted on both.

    stderr of every run goes to `<workdir>/broker-<n>.stderr.log` (n = run number).
    """

    def __init__(self, binary: Path, workdir: Path, cores: int = 2, extra_args: Sequence[str] = ()):
        self.binary = Path(binary)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(exist_ok=True)
        self.port = free_port()
        self.host = "127.0.0.1"
        self.bootstrap = f"{self.host}:{self.port}"
        self.cores = cores
        self.extra_args = list(extra_args)
        # Every test broker gets its own metrics endpoint (the default port would be
        # taken by whichever broker started first).
        self.metrics_port = free_port()
        self.proc: Optional[subprocess.Popen] = None
        self.runs = 0
        self.stderr_paths: List[Path] = []
        self._stderr_file = None

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def args(self) -> List[str]:
        return [
            str(self.binary),
            "--listen", self.bootstrap,
            "--data-dir", str(self.data_dir),
            "--cores", str(self.cores),
            *([] if any(a.startswith("--metrics-listen") for a in self.extra_args)
              else ["--metrics-listen", f"127.0.0.1:{self.metrics_port}"]),
            *self.extra_args,
            # The whole suite can run in another mode, e.g. `--shard-ports 0`, except
            # where a test sets one of those flags itself.
            *self.suite_args(),
        ]

    def suite_args(self) -> List[str]:
        """`SHARDLOG_TEST_ARGS`, or nothing when this broker's own flags name one of its
        flags."""
        args = shlex.split(os.environ.get("SHARDLOG_TEST_ARGS", ""))
        own = {a.split("=")[0] for a in self.extra_args if a.startswith("--")}
        return [] if any(a.split("=")[0] in own for a in args if a.startswith("--")) else args

    def http_get(self, path: str, timeout: float = 10.0) -> Tuple[int, str, str]:
        """GET `path` from the broker's metrics endpoint: (status, content type, body)."""
        import urllib.error
        import urllib.request
        url = f"http://127.0.0.1:{self.metrics_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return r.status, r.headers.get("Content-Type", ""), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type", ""), e.read().decode()

    @property
    def stderr_path(self) -> Path:
        return self.stderr_paths[-1]

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> "Broker":
        assert not self.running(), "broker already running"
        if not self.binary.is_file():
            raise BrokerError(f"shardlog binary not found at {self.binary} (set SHARDLOG_BIN)")
        self.runs += 1
        path = self.workdir / f"broker-{self.runs}.stderr.log"
        self.stderr_paths.append(path)
        self._stderr_file = open(path, "wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHARDLOG_")}
        env.setdefault("RUST_BACKTRACE", "1")
        if "SHARDLOG_LOG" in os.environ:
            env["SHARDLOG_LOG"] = os.environ["SHARDLOG_LOG"]
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=self._stderr_file,
            stderr=self._stderr_file,
            env=env,
            cwd=self.workdir,
        )
        self._wait_accepting()
        return self

    def _wait_accepting(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last_err: Optional[Exception] = None
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise BrokerError(
                    f"shardlog exited with code {rc} before accepting connections\n"
                    f"command: {' '.join(self.args)}\n{self.describe_logs()}"
                )
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return
            except OSError as e:
                last_err = e
                time.sleep(0.05)
        threads = self.thread_states()
        self._force_kill()
        raise BrokerError(
            f"shardlog did not accept TCP connections on {self.bootstrap} within "
            f"{START_TIMEOUT_S:.0f}s (last error: {last_err})\n"
            f"command: {' '.join(self.args)}\nthreads (name state wchan):\n{threads}\n{self.describe_logs()}"
        )

    def thread_states(self) -> str:
        """name, state and kernel wait channel of every thread (for hang reports)."""
        if self.proc is None:
            return ""
        out = []
        task_dir = Path(f"/proc/{self.proc.pid}/task")
        try:
            for t in sorted(task_dir.iterdir(), key=lambda p: int(p.name)):
                try:
                    comm = (t / "comm").read_text().strip()
                    state = (t / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    wchan = (t / "wchan").read_text().strip()
                except OSError:
                    continue
                out.append(f"  {t.name} {comm} {state} {wchan}")
        except OSError as e:
            out.append(f"  ({e})")
        return "\n".join(out)

    def stop(self) -> int:
        """SIGTERM, wait for exit, assert exit code 0 (clean shutdown)."""
        assert self.proc is not None, "broker never started"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._force_kill()
                raise BrokerError(
                    f"shardlog did not exit within {STOP_TIMEOUT_S:.0f}s of SIGTERM (killed)\n"
                    + self.describe_logs()
                )
        rc = self.proc.returncode
        self._close_stderr()
        if rc != 0:
            raise BrokerError(f"shardlog exited with code {rc} after SIGTERM (expected 0)\n" + self.describe_logs())
        return rc

    def kill9(self) -> int:
        """SIGKILL (a crash): no shutdown work at all. Returns the wait status (-9)."""
        assert self.proc is not None and self.proc.poll() is None, "broker is not running"
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._close_stderr()
        return self.proc.returncode

    def restart(self) -> "Broker":
        """Clean stop (asserting exit 0), then start again on the same port and data dir."""
        self.stop()
        return self.start()

    def _force_kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._close_stderr()

    def _close_stderr(self) -> None:
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

    def assert_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            rc = None if self.proc is None else self.proc.returncode
            raise BrokerError(f"shardlog is not running (exit code {rc})\n" + self.describe_logs())

    # -- diagnostics -------------------------------------------------------------------

    def describe_logs(self, max_bytes: int = 12000) -> str:
        out = []
        for p in self.stderr_paths:
            try:
                data = p.read_bytes()
            except OSError:
                continue
            tail = data[-max_bytes:]
            cut = f" (last {max_bytes} of {len(data)} bytes)" if len(data) > max_bytes else ""
            out.append(f"----- {p}{cut} -----\n{tail.decode('utf-8', 'replace')}")
        return "\n".join(out) if out else "(no broker stderr captured)"


# --------------------------------------------------------------------------------------
# Raw Kafka wire helpers (big-endian, classic non-flexible encodings)
# --------------------------------------------------------------------------------------


def enc_str(s: Optional[str]) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def request_header_v1(api_key: int, api_version: int, correlation_id: int, client_id: str = "raw-test") -> bytes:
    return struct.pack(">hhi", api_key, api_version, correlation_id) + enc_str(client_id)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    assert 0 <= size < 64 << 20, f"absurd response size {size}"
    return recv_exact(sock, size)


def connection_closed_by_peer(sock: socket.socket, timeout: float = 10.0) -> Tuple[bool, bytes]:
    """Wait up to `timeout` for the peer to close. Returns (closed, bytes received before)."""
    got = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return False, bytes(got)
        except (ConnectionResetError, BrokenPipeError):
            return True, bytes(got)
        if not chunk:
            return True, bytes(got)
        got += chunk
    return False, bytes(got)


class Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        assert self.pos + n <= len(self.data), f"short response: need {n} at {self.pos}/{len(self.data)}"
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def i16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def i32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def string(self) -> Optional[str]:
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def array(self, item):
        n = self.i32()
        return [] if n < 0 else [item(self) for _ in range(n)]


def raw_connect(bootstrap: str, timeout: float = 10.0) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    s.settimeout(timeout)
    return s


def raw_api_versions(bootstrap: str, correlation_id: int = 7) -> Dict[int, Tuple[int, int]]:
    """ApiVersions v0 on a fresh connection; returns {api_key: (min, max)}. Asserts error 0."""
    with raw_connect(bootstrap) as s:
        s.sendall(frame(request_header_v1(18, 0, correlation_id)))
        r = Reader(recv_frame(s))
        assert r.i32() == correlation_id
        err = r.i16()
        assert err == 0, f"ApiVersions v0 error_code {err}"
        apis = r.array(lambda r: (r.i16(), r.i16(), r.i16()))
        return {k: (lo, hi) for k, lo, hi in apis}


def raw_metadata_v1(bootstrap: str, topics: Optional[List[str]], correlation_id: int = 11) -> Dict[str, dict]:
    """Metadata v1 on a fresh connection. Returns {topic: {"error": code, "partitions": {p: err}}}."""
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(enc_str(t) for t in topics)
    with raw_connect(bootstrap) as s:
        s.sendall(frame(request_header_v1(3, 1, correlation_id) + body))
        r = Reader(recv_frame(s))
        assert r.i32() == correlation_id
        r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))  # brokers
        r.i32()  # controller id

        def partition(r):
            err, pid, _leader = r.i16(), r.i32(), r.i32()
            r.array(lambda r: r.i32())
            r.array(lambda r: r.i32())
            return pid, err

        def topic(r):
            err, name, _internal = r.i16(), r.string(), r.i8()
            parts = dict(r.array(partition))
            return name, {"error": err, "partitions": parts}

        return dict(r.array(topic))


# Kafka error codes used by the tests
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36


# --------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    key: Optional[bytes]
    value: Optional[bytes]
    headers: Tuple[Tuple[str, Optional[bytes]], ...]
    timestamp: int


@dataclass
class Expected:
    """What each partition must hold, in order."""

    partitions: Dict[int, List[Rec]] = field(default_factory=dict)

    def add(self, partition: int, rec: Rec) -> None:
        self.partitions.setdefault(partition, []).append(rec)

    def counts(self) -> Dict[int, int]:
        return {p: len(v) for p, v in self.partitions.items()}

    def total(self) -> int:
        return sum(len(v) for v in self.partitions.values())


_WORDS = ("lorem ipsum dolor sit amet kafka shard log broker record batch offset "
          "партиция 分区 パーティション ✓ ✗ 🚀 café naïve ").split()


def make_record(rng: random.Random, i: int, ts_base: int, allow_null_header_values: bool) -> Rec:
    """A record with a mix of the interesting shapes (deterministic per rng)."""
    k = rng.random()
    if k < 0.20:
        key = None
    elif k < 0.25:
        key = b""
    elif k < 0.75:
        key = f"key-{i % 997}".encode()
    else:
        key = rng.randbytes(rng.randint(1, 48))

    v = rng.random()
    if v < 0.08:
        value = None
    elif v < 0.16:
        value = b""
    elif v < 0.55:  # compressible text
        value = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 60))).encode()
    elif v < 0.95:  # incompressible bytes
        value = rng.randbytes(rng.randint(1, 400))
    elif v < 0.995:
        value = (f"{i}:".encode() + rng.randbytes(16)) * rng.randint(50, 300)
    else:
        value = rng.randbytes(rng.randint(20_000, 60_000))

    h = rng.random()
    headers: Tuple[Tuple[str, Optional[bytes]], ...] = ()
    if h < 0.5:
        n = rng.randint(1, 3)
        hs = []
        for j in range(n):
            hk = rng.choice(["trace-id", "content-type", "ключ", "dup", f"h{j}"])
            r = rng.random()
            if r < 0.1:
                hv: Optional[bytes] = b""
            elif r < 0.15 and allow_null_header_values:
                hv = None
            else:
                hv = rng.randbytes(rng.randint(1, 32))
            hs.append((hk, hv))
        headers = tuple(hs)

    return Rec(key=key, value=value, headers=headers, timestamp=ts_base + i)


# --------------------------------------------------------------------------------------
# Consuming everything (confluent-kafka / kafka-python)
# --------------------------------------------------------------------------------------


@dataclass
class Got:
    offset: int
    rec: Rec


def norm_headers(h) -> Tuple[Tuple[str, Optional[bytes]], ...]:
    if not h:
        return ()
    return tuple((k if isinstance(k, str) else k.decode(), v) for k, v in h)


def confluent_consume_all(bootstrap: str, topic: str, counts: Dict[int, int], timeout_s: float = 120.0,
                          extra_conf: Optional[dict] = None) -> Dict[int, List[Got]]:
    """assign() every partition in `counts` from offset 0 and read until each partition has
    delivered `counts[p]` records (or the deadline). No consumer group is used (group.id is
    required by librdkafka's constructor, but nothing is subscribed or committed)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "shardlog-tests-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "auto.offset.reset": "error",
        "fetch.max.bytes": 8 << 20,
        "max.partition.fetch.bytes": 2 << 20,
    }
    conf.update(extra_conf or {})
    c = Consumer(conf)
    out: Dict[int, List[Got]] = {p: [] for p in counts}
    try:
        c.assign([TopicPartition(topic, p, 0) for p in counts])
        remaining = sum(counts.values())
        deadline = time.monotonic() + timeout_s
        while remaining > 0 and time.monotonic() < deadline:
            for m in c.consume(num_messages=5000, timeout=0.5):
                err = m.error()
                if err is not None:
                    raise AssertionError(f"consume error on {m.topic()}[{m.partition()}]: {err}")
                p = m.partition()
                out.setdefault(p, []).append(
                    Got(m.offset(), Rec(m.key(), m.value(), norm_headers(m.headers()), m.timestamp()[1])))
                if len(out[p]) <= counts.get(p, 0):
                    remaining -= 1
    finally:
        c.close()
    return out


def confluent_watermarks(bootstrap: str, topic: str, partitions: Sequence[int]) -> Dict[int, Tuple[int, int]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "shardlog-tests-unused", "enable.auto.commit": False})
    try:
        return {p: tuple(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False))
                for p in partitions}
    finally:
        c.close()


def kafka_python_consume_all(bootstrap: str, topic: str, counts: Dict[int, int],
                             timeout_s: float = 180.0) -> Dict[int, List[Got]]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="none",
        fetch_max_bytes=8 << 20,
        max_partition_fetch_bytes=2 << 20,
        request_timeout_ms=30000,
    )
    out: Dict[int, List[Got]] = {p: [] for p in counts}
    try:
        tps = [TopicPartition(topic, p) for p in counts]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        remaining = sum(counts.values())
        deadline = time.monotonic() + timeout_s
        while remaining > 0 and time.monotonic() < deadline:
            batch = c.poll(timeout_ms=500, max_records=10000)
            for tp, msgs in batch.items():
                for m in msgs:
                    out.setdefault(tp.partition, []).append(
                        Got(m.offset, Rec(m.key, m.value, norm_headers(m.headers), m.timestamp)))
                    if len(out[tp.partition]) <= counts.get(tp.partition, 0):
                        remaining -= 1
    finally:
        c.close()
    return out


def kafka_python_offsets(bootstrap: str, topic: str, partitions: Sequence[int]) -> Dict[int, Tuple[int, int]]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        lo = c.beginning_offsets(tps)
        hi = c.end_offsets(tps)
        return {tp.partition: (lo[tp], hi[tp]) for tp in tps}
    finally:
        c.close()


def assert_matches(expected: Expected, got: Dict[int, List[Got]], what: str) -> None:
    """Exact comparison: per partition, offsets 0..n-1 in order and identical records."""
    problems = []
    for p in sorted(set(expected.partitions) | set(got)):
        exp = expected.partitions.get(p, [])
        g = got.get(p, [])
        if len(g) != len(exp):
            problems.append(f"partition {p}: got {len(g)} records, expected {len(exp)}")
        offsets = [x.offset for x in g]
        if offsets != list(range(len(g))):
            bad = next(i for i, o in enumerate(offsets) if o != i)
            problems.append(f"partition {p}: offsets not contiguous from 0: index {bad} has offset "
                            f"{offsets[bad]} (around: {offsets[max(0, bad - 3):bad + 3]})")
        for i, (e, x) in enumerate(zip(exp, g)):
            if e != x.rec:
                diffs = [f for f in ("key", "value", "headers", "timestamp")
                         if getattr(e, f) != getattr(x.rec, f)]
                problems.append(
                    f"partition {p} index {i} (offset {x.offset}): differs in {diffs}: "
                    f"expected {_short(e)} got {_short(x.rec)}")
                break
    assert not problems, f"{what}: " + "\n".join(problems[:20])


def _short(r: Rec) -> str:
    def b(x):
        if x is None:
            return "None"
        return repr(x[:40]) + (f"...({len(x)}B)" if len(x) > 40 else "")
    return f"Rec(key={b(r.key)}, value={b(r.value)}, headers={r.headers!r:.120}, ts={r.timestamp})"


def wait_until(pred, timeout_s: float, interval_s: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
