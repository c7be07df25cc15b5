"""One consumer's fetch cycle, end to end, from a system-wide trace of system calls.

A consumer with one fetch in flight per broker (librdkafka, the Java consumer) moves at
one response per round trip, so its throughput is the response size over the cycle:
client sends Fetch -> broker reads the request -> broker works (reads, cross-shard hops)
-> broker sends the response -> client reads its last byte -> client works -> client
sends the next Fetch. This splits every cycle into those steps (issue 8, item 7).

Record while the consumer runs (root; `perf` tracepoints, low overhead):

    perf record -a -o fetch.data -e syscalls:sys_enter_sendmsg,syscalls:sys_exit_sendmsg,\\
    syscalls:sys_enter_recvmsg,syscalls:sys_exit_recvmsg,syscalls:sys_enter_recvfrom,\\
    syscalls:sys_exit_recvfrom -- <consumer command>
    perf script -i fetch.data > fetch.txt
    python3 perf/fetch_cycle.py fetch.txt            # librdkafka (thread rdk:broker*)

The client sends each request with `sendmsg` and reads with `recvmsg` (librdkafka does);
the broker reads with `recvfrom` and writes with `sendmsg` (shardlog does). Cycles that
moved less than `--min-bytes` (metadata, offset requests, empty fetches) are left out.
Standard library only.
"""

import argparse
import re
import sys
from dataclasses import dataclass

LINE = re.compile(r"\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)")


@dataclass
class Event:
    t: float  # seconds
    comm: str  # thread name
    name: str  # tracepoint, e.g. syscalls:sys_exit_recvmsg
    rest: str  # the tracepoint's fields

    def ret(self):
        """The return value of a `sys_exit_*` event (negative errno as a negative int)."""
        v = int(self.rest.split()[0], 16)
        return v - (1 << 64) if v >= 1 << 63 else v


@dataclass
class Cycle:
    """One fetch cycle; every duration in seconds."""

    to_broker: float  # client's Fetch sendmsg -> broker's recvfrom of it returns
    broker_work: float  # -> broker's response sendmsg starts
    broker_send: float  # -> that sendmsg (the last one, if several) returns
    client_tail: float  # -> client's last recvmsg of the response returns
    client_work: float  # -> client's next Fetch sendmsg
    total: float
    bytes: int  # response bytes the client read


def parse(lines):
    out = []
    for line in lines:
        m = LINE.match(line)
        if m:
            comm, _tid, _cpu, t, name, rest = m.groups()
            out.append(Event(float(t), comm, name, rest))
    return out


def cycles(events, client=r"^rdk:broker", broker=r"^shard-", min_bytes=1 << 19):
    """The fetch cycles in `events` (time order): from each client `sendmsg` to the next,
    those in which the broker read a request, sent a response and the client read at least
    `min_bytes`."""
    is_client = re.compile(client).search
    is_broker = re.compile(broker).search
    sends = [i for i, e in enumerate(events)
             if is_client(e.comm) and e.name == "syscalls:sys_enter_sendmsg"]
    out = []
    for a, b in zip(sends, sends[1:]):
        seg = events[a:b]
        req = [e for e in seg if is_broker(e.comm)
               and e.name == "syscalls:sys_exit_recvfrom" and e.ret() > 0]
        snd = [e for e in seg if is_broker(e.comm) and e.name == "syscalls:sys_enter_sendmsg"]
        sndx = [e for e in seg if is_broker(e.comm) and e.name == "syscalls:sys_exit_sendmsg"]
        got = [e for e in seg if is_client(e.comm)
               and e.name == "syscalls:sys_exit_recvmsg" and e.ret() > 0]
        if not (req and snd and sndx and got):
            continue
        n = sum(e.ret() for e in got)
        if n < min_bytes:
            continue
        t0, t5 = events[a].t, events[b].t
        t1, t2, t3, t4 = req[0].t, snd[0].t, sndx[-1].t, got[-1].t
        out.append(Cycle(t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0, n))
    return out


STEPS = [
    ("to_broker", "client send -> broker has the request"),
    ("broker_work", "broker: request -> response send starts"),
    ("broker_send", "broker: response sendmsg"),
    ("client_tail", "send returned -> client read the last byte"),
    ("client_work", "client: last byte -> next Fetch"),
    ("total", "cycle"),
]


def summary(cs):
    """Lines of text: p50, mean and p90 of each step in microseconds, and bytes per cycle."""
    if not cs:
        return ["no fetch cycle found"]
    lines = [f"{len(cs)} fetch cycles, {sum(c.bytes for c in cs) / len(cs) / 2**20:.2f} MiB "
             f"per response on average; microseconds:",
             f"{'step':44s} {'p50':>7s} {'mean':>7s} {'p90':>7s} {'share':>6s}"]
    total = sum(c.total for c in cs)
    for key, label in STEPS:
        v = sorted(getattr(c, key) for c in cs)
        share = sum(v) / total if total else 0
        lines.append(f"{label:44s} {v[len(v) // 2] * 1e6:7.0f} {sum(v) / len(v) * 1e6:7.0f} "
                     f"{v[int(len(v) * 0.9)] * 1e6:7.0f} {share:6.1%}")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="`perf script` output")
    p.add_argument("--client", default=r"^rdk:broker", help="client thread name (regex)")
    p.add_argument("--broker", default=r"^shard-", help="broker thread names (regex)")
    p.add_argument("--min-bytes", type=int, default=1 << 19)
    a = p.parse_args(argv)
    with open(a.trace) as f:
        cs = cycles(parse(f), a.client, a.broker, a.min_bytes)
    print("\n".join(summary(cs)))


if __name__ == "__main__":
    sys.exit(main())
