"""Connection limits, queued request bytes, idle connections, one broker per address,
start-up and panics: what the broker holds back or refuses, seen from raw sockets.

Flags under test: --connections-max-idle-ms, --response-write-stall-ms, --max-connections,
--max-connections-per-ip,
--queued-max-request-bytes (and -per-connection), the listen lock, the panic hook.
"""

from __future__ import annotations

import os
import resource
import socket
import struct
import subprocess
import threading
import time

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from helpers import (
    Broker,
    Reader,
    connection_closed_by_peer,
    enc_str,
    frame,
    raw_connect,
    wait_until,
    recv_frame,
    request_header_v1,
    shardlog_bin,
)


def api_versions_frame(correlation_id: int, client_id: str = "raw-test") -> bytes:
    return frame(request_header_v1(18, 0, correlation_id, client_id))


def answered(sock: socket.socket, correlation_id: int, timeout: float) -> bool:
    """Sends ApiVersions v0 and says whether its answer came within `timeout` s."""
    sock.sendall(api_versions_frame(correlation_id))
    sock.settimeout(timeout)
    try:
        r = Reader(recv_frame(sock))
    except socket.timeout:
        return False
    assert r.i32() == correlation_id
    assert r.i16() == 0
    return True


def connect_served(bootstrap: str, within: float = 10) -> socket.socket:
    """A connection the broker serves, retried while it closes new ones."""
    deadline = time.monotonic() + within
    while True:
        s = raw_connect(bootstrap)
        try:
            if answered(s, 0, timeout=1):
                return s
        except (ConnectionError, OSError):
            pass
        s.close()
        assert time.monotonic() < deadline, f"no connection served within {within} s"
        time.sleep(0.1)


def fetch_v4_frame(correlation_id: int, topic: str, max_wait_ms: int) -> bytes:
    """Fetch v4 of partition 0 from offset 0: a long poll on an empty partition."""
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, 1 << 20, 0)
    body += struct.pack(">i", 1) + enc_str(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 1 << 20)
    return frame(request_header_v1(1, 4, correlation_id) + body)


# ------------------------------------------------------------------ idle connections


def test_a_stalled_half_frame_is_dropped_after_the_idle_timeout(broker_factory):
    b = broker_factory("--connections-max-idle-ms", "600")
    with raw_connect(b.bootstrap) as s:
        # 100 bytes announced, 10 sent, then nothing.
        s.sendall(struct.pack(">i", 100) + b"\x00" * 10)
        start = time.monotonic()
        closed, got = connection_closed_by_peer(s, timeout=10)
        waited = time.monotonic() - start
    assert closed and got == b""
    assert 0.5 <= waited < 5, waited


def test_an_active_connection_is_not_idle(broker_factory):
    b = broker_factory("--connections-max-idle-ms", "600")
    with raw_connect(b.bootstrap) as s:
        # A request every 200 ms for 2 s: more than three idle periods in all.
        for i in range(10):
            assert answered(s, i, timeout=5)
            time.sleep(0.2)
        # Then silence: closed within about one period.
        closed, _ = connection_closed_by_peer(s, timeout=10)
        assert closed


def test_a_long_poll_longer_than_the_idle_timeout_is_answered(broker_factory):
    b = broker_factory("--connections-max-idle-ms", "500")
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic("idle-poll", 1, 1)])
    with raw_connect(b.bootstrap) as s:
        s.sendall(fetch_v4_frame(3, "idle-poll", 1500))
        s.settimeout(10)
        r = Reader(recv_frame(s))
        assert r.i32() == 3


def test_sigterm_answers_a_long_poll_at_once_and_exits_0(broker_factory):
    """A Fetch long-polling an empty partition (max wait 60 s, longer than the drain
    timeout) when SIGTERM arrives is answered at once, and the broker exits 0. Before,
    the drain waited out the poll, gave up after 10 s, and the last connection to end
    then aborted the broker (a glommio Gate whose close was dropped)."""
    b = broker_factory()
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic("long-poll", 1, 1)])
    with raw_connect(b.bootstrap) as s:
        s.sendall(fetch_v4_frame(9, "long-poll", 60_000))
        time.sleep(0.5)
        started = time.monotonic()
        b.stop()
        assert time.monotonic() - started < 5
        s.settimeout(5)
        r = Reader(recv_frame(s))
        assert r.i32() == 9


def test_a_client_that_stops_reading_responses_is_closed(broker_factory):
    """Responses pile up unread (a small receive buffer, 1 MiB fetches pipelined): once
    the client takes nothing for the idle time the broker closes the connection, so its
    queued responses stop holding the shard's memory; others are served meanwhile."""
    from kafka import KafkaProducer

    b = broker_factory("--response-write-stall-ms", "800")
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic("unread", 1, 1)])
    p = KafkaProducer(bootstrap_servers=b.bootstrap, acks=1)
    for _ in range(64):
        p.send("unread", value=b"x" * (16 << 10), partition=0)
    p.flush()
    p.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    host, port = b.bootstrap.split(":")
    s.connect((host, int(port)))
    try:
        # 40 fetches of 1 MiB each, never read: far more than the socket buffers hold.
        for i in range(40):
            s.sendall(fetch_v4_frame(100 + i, "unread", 0))
        deadline = time.monotonic() + 15
        needle = "closing connection: the client stopped reading its responses"
        while needle not in b.stderr_path.read_text():
            assert time.monotonic() < deadline, "the stalled connection was never closed"
            with raw_connect(b.bootstrap) as other:
                assert answered(other, 1, timeout=5)
            time.sleep(0.2)
    finally:
        s.close()
    with raw_connect(b.bootstrap) as other:
        assert answered(other, 2, timeout=5)


def test_acks_0_produce_within_a_small_budget_loses_nothing(broker_factory):
    """acks=0 requests get no response, but their bytes stay in the budgets until their
    appends finish: with a 256 KiB per-connection budget a librdkafka producer at full
    speed is held back by TCP, and every record it sent is stored, in order."""
    from confluent_kafka import Producer

    from helpers import confluent_consume_all

    b = broker_factory("--queued-max-request-bytes-per-connection", str(256 << 10))
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic("acks0", 4, 1)])
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": 0, "linger.ms": 5,
                  "batch.size": 64 << 10, "enable.idempotence": False})
    per_partition = 5000
    for i in range(per_partition):
        for part in range(4):
            p.produce("acks0", value=b"%06d" % i + b"." * 1000, partition=part)
            p.poll(0)
    assert p.flush(60) == 0
    counts = {part: per_partition for part in range(4)}
    got = confluent_consume_all(b.bootstrap, "acks0", counts, timeout_s=60)
    for part in range(4):
        values = [g.rec.value[:6] for g in got[part]]
        assert values == [b"%06d" % i for i in range(per_partition)], part
        assert [g.offset for g in got[part]] == list(range(per_partition))


# ------------------------------------------------------------------ connection counts


def test_max_connections_per_ip_closes_the_one_too_many(broker_factory):
    b = broker_factory("--max-connections-per-ip", "2")
    # (The test harness's start-up probe connection may still be counted for a moment.)
    first, second = connect_served(b.bootstrap), connect_served(b.bootstrap)
    try:
        with raw_connect(b.bootstrap) as third:
            closed, got = connection_closed_by_peer(third, timeout=5)
            assert closed and got == b""
        first.close()
        # Its place comes back once the broker has seen it close.
        connect_served(b.bootstrap).close()
    finally:
        first.close()
        second.close()


def test_max_connections_makes_new_clients_wait_in_the_backlog(broker_factory):
    b = broker_factory("--max-connections", "2")
    first, second = raw_connect(b.bootstrap), raw_connect(b.bootstrap)
    third = None
    try:
        assert answered(first, 1, timeout=5)
        assert answered(second, 2, timeout=5)
        third = raw_connect(b.bootstrap)  # the kernel completes the handshake
        assert not answered(third, 3, timeout=1.0)  # but the broker does not accept it
        first.close()
        third.settimeout(5)
        r = Reader(recv_frame(third))  # the request sent above, answered once accepted
        assert r.i32() == 3
    finally:
        for s in (first, second, third):
            if s is not None:
                s.close()


# ------------------------------------------------------------------ queued request bytes


def test_the_shard_budget_stops_reading_until_a_response_goes_out(broker_factory):
    topic = "budget"
    poll = fetch_v4_frame(9, topic, 1500)
    # One shard; its whole budget is the long poll's size: while the poll waits, no
    # other request can be read on that shard.
    b = broker_factory("--queued-max-request-bytes", str(len(poll)), cores=1)
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    with raw_connect(b.bootstrap) as a, raw_connect(b.bootstrap) as other:
        assert answered(other, 1, timeout=5)
        start = time.monotonic()
        a.sendall(poll)
        time.sleep(0.5)  # the poll is read first (a loaded machine may need the margin)
        assert answered(other, 2, timeout=10)
        waited = time.monotonic() - start
        a.settimeout(5)
        assert Reader(recv_frame(a)).i32() == 9
    assert waited >= 1.3, f"the second request was read while the budget was spent ({waited:.2f} s)"


def test_without_a_spent_budget_other_connections_are_not_held_up(broker_factory):
    topic = "budget"
    b = broker_factory(cores=1)
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    with raw_connect(b.bootstrap) as a, raw_connect(b.bootstrap) as other:
        a.sendall(fetch_v4_frame(9, topic, 1500))
        time.sleep(0.2)
        start = time.monotonic()
        assert answered(other, 2, timeout=10)
        assert time.monotonic() - start < 1.0
        a.settimeout(5)
        assert Reader(recv_frame(a)).i32() == 9


def test_pipelined_requests_larger_than_the_budgets_are_all_answered_in_order(broker_factory):
    # Every request is larger than both budgets: each waits until it is alone, and none
    # is lost or reordered.
    b = broker_factory("--queued-max-request-bytes", "16", "--queued-max-request-bytes-per-connection", "8")
    with raw_connect(b.bootstrap) as s:
        s.sendall(b"".join(api_versions_frame(i) for i in range(100)))
        s.settimeout(10)
        got = [Reader(recv_frame(s)).i32() for _ in range(100)]
    assert got == list(range(100))


# ------------------------------------------------------------------ one broker per address


def start_second(listen: str, workdir) -> subprocess.CompletedProcess:
    data = workdir / "second-data"
    data.mkdir()
    return subprocess.run(
        [str(shardlog_bin()), "--listen", listen, "--data-dir", str(data), "--cores", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_second_shardlog_on_the_same_address_refuses_to_start(broker_factory, tmp_path):
    b = broker_factory()
    second = start_second(b.bootstrap, tmp_path)
    assert second.returncode == 1
    assert f"another shardlog is already listening on {b.bootstrap}" in second.stderr
    # The first one is untouched.
    with raw_connect(b.bootstrap) as s:
        assert answered(s, 1, timeout=5)


def test_a_port_taken_by_another_process_is_refused(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        listen = "127.0.0.1:%d" % taken.getsockname()[1]
        second = start_second(listen, tmp_path)
    assert second.returncode == 1
    assert f"cannot listen on {listen}" in second.stderr


def reuseport_listener(host: str) -> socket.socket:
    """A listening socket of this process with SO_REUSEPORT on a free port of `host`:
    the kernel lets a shardlog of the same user bind the port beside it."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((host, 0))
    s.listen()
    return s


@pytest.mark.parametrize("their_host", ["127.0.0.1", "0.0.0.0"])
def test_a_port_another_process_listens_on_with_so_reuseport_is_refused(tmp_path, their_host):
    # Bound beside it, shardlog would get only part of the connections: the bind probe
    # succeeds, so the listener is found in /proc/net/tcp.
    with reuseport_listener(their_host) as theirs:
        port = theirs.getsockname()[1]
        listen = f"127.0.0.1:{port}"
        second = start_second(listen, tmp_path)
    assert second.returncode == 1, second.stderr
    assert f"cannot listen on {listen}: pid {os.getpid()} (" in second.stderr
    assert f"already listens on {their_host}:{port} with SO_REUSEPORT and would take connections" in second.stderr


def test_a_restart_right_after_kill_9_waits_out_the_dead_brokers_listening_sockets(tmp_path):
    # For 100-200 ms after a SIGKILLed broker is reaped, its listening sockets are still
    # in /proc/net/tcp, held by no process (the kernel closes them as it tears down the
    # io_uring instances): the check for other processes on the port must wait them out,
    # not refuse (it refused every time before).
    # (A client connecting in that window is accepted by the dead broker's socket and
    # reset, so `start`, which waits for a TCP connect, may return early: what counts is
    # that the new broker stays up and answers.)
    b = Broker(shardlog_bin(), tmp_path / "b")
    b.start()

    def serving() -> bool:
        assert b.running(), "the restarted broker exited:\n" + b.describe_logs()
        try:
            with raw_connect(b.bootstrap, timeout=2) as s:
                return answered(s, 1, timeout=5)
        except OSError:
            return False

    try:
        for _ in range(3):
            b.kill9()
            b.start()
            wait_until(serving, 20, what="the restarted broker to answer")
    finally:
        b.stop()


# ------------------------------------------------------------------ start-up and panics


def test_clients_during_start_up_are_refused_until_it_serves(tmp_path):
    b = Broker(shardlog_bin(), tmp_path / "b")
    # Something to recover: 200 partitions.
    b.start()
    with KafkaAdminClient(bootstrap_servers=b.bootstrap) as admin:
        admin.create_topics([NewTopic("many", 200, 1)])
    b.stop()
    outcomes = {"refused": 0, "answered": 0}
    failures = []
    stop = threading.Event()

    def probe():
        i = 0
        while not stop.is_set():
            i += 1
            try:
                s = socket.create_connection((b.host, b.port), timeout=5)
            except ConnectionRefusedError:
                outcomes["refused"] += 1
                time.sleep(0.002)
                continue
            try:
                with s:
                    ok = answered(s, i, timeout=10)
                if ok:
                    outcomes["answered"] += 1
                else:
                    failures.append("no answer within 10 s")
            except (OSError, AssertionError) as e:
                failures.append(repr(e))

    t = threading.Thread(target=probe)
    t.start()
    try:
        b.start()
        time.sleep(0.5)
    finally:
        stop.set()
        t.join(30)
        b.stop()
    assert failures == []
    # The port was closed while the broker started (refused), then served.
    assert outcomes["refused"] > 0 and outcomes["answered"] > 0, outcomes


def start_without_core_file(b: Broker) -> None:
    """Starts `b` with RLIMIT_CORE 0, so that its abort leaves no core file."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    try:
        b.start()
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))


def test_a_panic_is_logged_with_its_request_and_ends_the_process(tmp_path):
    b = Broker(shardlog_bin(), tmp_path / "b", extra_args=["--debug-panic-client-id", "boom"])
    start_without_core_file(b)
    with raw_connect(b.bootstrap) as s:
        assert answered(s, 1, timeout=5)  # another client id: served
        s.sendall(api_versions_frame(77, client_id="boom"))
        closed, _ = connection_closed_by_peer(s, timeout=10)
        assert closed
    rc = b.proc.wait(timeout=10)
    b._close_stderr()
    assert rc == -6  # SIGABRT
    log = b.stderr_path.read_text()
    assert "panic:" in log
    assert 'request api_key=18 api_version=0 correlation_id=77 client_id="boom"' in log


# ------------------------------------------------------------------ stall watchdog


def test_a_stalled_shard_is_reported_then_runs_again(broker_factory):
    """A request that blocks its shard's thread for 3 s (a hidden debug flag): the
    watchdog logs the stall once, then that the shard runs again; the request is answered
    and the broker goes on."""
    b = broker_factory("--debug-stall-client-id", "slow", "--stall-warn-ms", "500",
                       "--stall-abort-ms", "0", cores=1)
    with raw_connect(b.bootstrap) as s:
        s.sendall(api_versions_frame(5, client_id="slow"))
        s.settimeout(15)
        assert Reader(recv_frame(s)).i32() == 5
        assert answered(s, 6, timeout=5)
    deadline = time.monotonic() + 5
    while "shard runs its tasks again" not in b.stderr_path.read_text():
        assert time.monotonic() < deadline, "the end of the stall was never logged"
        time.sleep(0.1)
    log = b.stderr_path.read_text()
    assert log.count("shard has not run its tasks for a while") == 1, log


def test_a_shard_stalled_past_the_abort_limit_ends_the_process(tmp_path):
    b = Broker(shardlog_bin(), tmp_path / "b", cores=1,
               extra_args=["--debug-stall-client-id", "slow", "--stall-abort-ms", "1000"])
    start_without_core_file(b)
    with raw_connect(b.bootstrap) as s:
        s.sendall(api_versions_frame(5, client_id="slow"))
        rc = b.proc.wait(timeout=10)
    b._close_stderr()
    assert rc == -6  # SIGABRT
    log = b.stderr_path.read_text()
    assert "shard stalled past --stall-abort-ms; aborting the broker" in log
