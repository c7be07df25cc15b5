"""The two brokers under test and what is read from them while they run: starting
shardlog and Apache Kafka (KRaft, formatted fresh) on a free port with a fresh data dir
under perf/cache/run/, pinned with taskset, and stopping them; broker CPU seconds and
peak RSS from /proc/<pid>, and the count of established client connections (ss).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import uuid
from typing import Optional

from .common import CLK_TCK, JVM_PERF_OPTS, KAFKA_DIR, LIBS, ROOT, RUN, BenchError, say, tail
from .tls import kafka_properties, shardlog_args

BROKERS = ["kafka", "shardlog"]


# ---------------------------------------------------------------- /proc helpers

def proc_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    fields = data[data.rindex(")") + 2:].split()
    # fields[0] is field 3 (state); utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def open_fds(pid: int) -> Optional[int]:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def reset_hwm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def established(port: int) -> int:
    try:
        r = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{port} )"],
                           capture_output=True, text=True, timeout=5)
        return len([l for l in r.stdout.splitlines() if l.strip()])
    except (OSError, subprocess.TimeoutExpired):
        return 0


# ---------------------------------------------------------------- brokers

class Broker:
    name = "?"

    def __init__(self, opts):
        self.opts = opts
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.dir = RUN / self.name
        self.log = RUN / f"{self.name}.log"
        self.start_cmd: list[str] = []
        self.extra_cmds: list[str] = []
        # An SSL listener beside the PLAINTEXT one when the run has TLS workloads
        # (opts.certs, shardbench.tls): its port, 0 without.
        self.ssl_port = 0

    @property
    def ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ssl_port}"

    def pick_ssl_port(self):
        self.ssl_port = 0
        if getattr(self.opts, "certs", None) is not None:
            self.ssl_port = free_port()
            while self.ssl_port == self.port:
                self.ssl_port = free_port()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def taskset(self) -> list[str]:
        return ["taskset", "-c", self.opts.cpuset] if shutil.which("taskset") else []

    def prepare(self):
        pass

    def start(self):
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self.port = free_port()
        self.prepare()
        logf = open(self.log, "w")
        self.proc = subprocess.Popen(self.start_cmd, stdout=logf, stderr=subprocess.STDOUT, cwd=ROOT,
                                     start_new_session=True)
        logf.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if not self.alive():
                raise BenchError(f"{self.name} exited during startup (rc {self.proc.returncode}); log tail:\n{tail(self.log)}")
            if port_open(self.port) and self.ready():
                return
            time.sleep(0.3)
        raise BenchError(f"{self.name} did not open 127.0.0.1:{self.port} within 90 s; log tail:\n{tail(self.log)}")

    def ready(self) -> bool:
        return True

    def relaunch(self) -> float:
        """Starts the broker again on the data dir and port it had (a restart: no fresh dir, no
        format), appending to its log; returns the monotonic time just before the exec. The
        caller decides when it counts as up."""
        logf = open(self.log, "a")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.start_cmd, stdout=logf, stderr=subprocess.STDOUT, cwd=ROOT,
                                     start_new_session=True)
        logf.close()
        return t0

    def stop(self, timeout: float = 60) -> Optional[int]:
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                say(f"{self.name} ignored SIGTERM for {timeout:.0f} s; killing it")
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        return rc

    def version(self) -> str:
        return "?"


class Shardlog(Broker):
    name = "shardlog"

    def prepare(self):
        self.metrics_port = free_port()
        while self.metrics_port == self.port:
            self.metrics_port = free_port()
        self.pick_ssl_port()
        ssl = shardlog_args(self.bootstrap, self.ssl_port, self.opts.certs) if self.ssl_port else []
        self.start_cmd = [*self.taskset(), str(self.opts.shardlog_bin), "--listen", self.bootstrap,
                          "--data-dir", str(self.dir / "data"),
                          "--cores", str(getattr(self.opts, "shardlog_cores", self.opts.cores)),
                          "--flush", self.opts.flush, "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
                          *ssl, *getattr(self.opts, "shardlog_arg", [])]

    def version(self) -> str:
        r = subprocess.run([str(self.opts.shardlog_bin), "--version"], capture_output=True, text=True)
        return r.stdout.strip() or "?"


class Kafka(Broker):
    name = "kafka"

    def prepare(self):
        cport = free_port()
        while cport == self.port:
            cport = free_port()
        props = (KAFKA_DIR / "server.properties").read_text()
        props = props.replace("@PORT@", str(self.port)).replace("@CONTROLLER_PORT@", str(cport)) \
            .replace("@LOG_DIR@", str(self.dir / "data"))
        self.pick_ssl_port()
        while self.ssl_port and self.ssl_port == cport:
            self.pick_ssl_port()
        if self.ssl_port:
            props = kafka_properties(props, self.port, self.ssl_port, self.opts.certs)
        cfg = self.dir / "server.properties"
        cfg.write_text(props)
        cluster_id = uuid.uuid4().bytes
        import base64
        cid = base64.urlsafe_b64encode(cluster_id).decode().rstrip("=")
        fmt = ["java", f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2-tools.properties'}", "-cp", f"{LIBS}/*",
               "kafka.tools.StorageTool", "format", "--standalone", "-t", cid, "-c", str(cfg)]
        r = subprocess.run(fmt, capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"kafka storage format failed: {r.stdout}{r.stderr}")
        self.extra_cmds = [shlex.join(fmt)]
        self.start_cmd = [*self.taskset(), "java", "-Xmx1G", "-Xms1G", *JVM_PERF_OPTS,
                          f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2-broker.properties'}",
                          "-cp", f"{LIBS}/*", "kafka.Kafka", str(cfg)]

    def ready(self) -> bool:
        try:
            return "Kafka Server started" in self.log.read_text(errors="replace")
        except OSError:
            return False

    def version(self) -> str:
        jars = sorted(LIBS.glob("kafka_2.13-*.jar"))
        return "Apache Kafka " + jars[0].name[len("kafka_2.13-"):-4] if jars else "?"

