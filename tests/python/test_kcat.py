"""The main job on real input: `kcat -P` a real multi-line text file into a topic and
`kcat -C -e` it back; the output must be identical to the file.

kcat (1.7.1, Debian) reads stdin line by line and *skips zero-length lines* (kcat.c,
producer_run: `if (len == 0) continue;`), so a file with empty lines cannot round-trip
through kcat byte for byte whatever the broker does. The exact test therefore uses a
file without empty lines; a second test feeds a file with empty lines and asserts the
exact output kcat must then produce (the file minus its empty lines) and the exact
record count.
"""

from __future__ import annotations

import inspect
import random
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import confluent_watermarks

KCAT = shutil.which("kcat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat not installed (run scripts/setup-test-deps)")

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def real_text_lines() -> list[bytes]:
    """~2,000+ lines: real source text plus generated unicode, tabs, CRs and 10 KB lines."""
    rng = random.Random(20240601)
    src = inspect.getsource(textwrap) + inspect.getsource(inspect)  # real text from the stdlib
    lines = [l.encode() for l in src.split("\n")]
    samples = [
        "Grüße aus Köln — «ça va?» 🙂",
        "日本語のテキスト、中文文本，한국어 텍스트",
        "Ελληνικά και Русский текст",
        "עברית ועربية: right-to-left",
        "combining: e\u0301 a\u0308 n\u0303 — zero width:\u200b|",
        "emoji: 👩‍💻🚀🔥 flags: 🇩🇪🇯🇵",
        "\ttab\tseparated\tvalues\t",
        "   leading and trailing spaces   ",
        "windows line ending kept as data\r",
        "nul-free control chars: \x01\x02\x1b[0m",
    ]
    for i in range(1200):
        r = rng.random()
        if r < 0.6:
            lines.append(f"{i:05d} {rng.choice(samples)}".encode())
        elif r < 0.97:
            lines.append(" ".join(rng.choice(samples) for _ in range(rng.randint(2, 12))).encode())
        else:  # ~10 KB lines
            lines.append((f"{i:05d} long " + "".join(rng.choice(samples) for _ in range(300))).encode()[:10240])
    lines.append(("x" * 10240).encode())
    lines.append(("ü" * 5120).encode())  # 10 KB of 2-byte chars
    return lines


def write_file(path: Path, lines: list[bytes]) -> bytes:
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    return data


def kcat_produce(bootstrap: str, topic: str, path: Path, codec: str) -> None:
    args = [KCAT, "-P", "-b", bootstrap, "-t", topic, "-p", "0", "-X", "acks=all"]
    if codec != "none":
        args += ["-X", f"compression.codec={codec}"]
    with open(path, "rb") as f:
        r = subprocess.run(args, stdin=f, capture_output=True, timeout=120)
    assert r.returncode == 0, f"kcat -P exited {r.returncode}: {r.stderr.decode(errors='replace')}"


def kcat_consume(bootstrap: str, topic: str) -> bytes:
    args = [KCAT, "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"]
    r = subprocess.run(args, capture_output=True, timeout=120)
    assert r.returncode == 0, f"kcat -C exited {r.returncode}: {r.stderr.decode(errors='replace')}"
    return r.stdout


def first_difference(a: bytes, b: bytes) -> str:
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    line = a[:n].count(b"\n") + 1
    return (f"lengths {len(a)} vs {len(b)}; first difference at byte {n} (line {line}): "
            f"{a[max(0, n - 40):n + 40]!r} vs {b[max(0, n - 40):n + 40]!r}")


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_roundtrip(broker, tmp_path, codec):
    lines = [l for l in real_text_lines() if l != b""]
    path = tmp_path / "input.txt"
    data = write_file(path, lines)
    assert len(lines) >= 2000 and max(len(l) for l in lines) >= 10240

    kcat_produce(broker.bootstrap, "text", path, codec)
    out = kcat_consume(broker.bootstrap, "text")

    assert out == data, first_difference(out, data)
    assert confluent_watermarks(broker.bootstrap, "text", [0]) == {0: (0, len(lines))}


def test_kcat_roundtrip_with_empty_lines(broker, tmp_path):
    rng = random.Random(7)
    lines = real_text_lines()
    for _ in range(300):  # extra empty lines, including runs of them
        lines.insert(rng.randrange(len(lines)), b"")
    path = tmp_path / "input.txt"
    write_file(path, lines)
    non_empty = [l for l in lines if l != b""]
    assert len(non_empty) < len(lines)

    kcat_produce(broker.bootstrap, "text", path, "none")
    out = kcat_consume(broker.bootstrap, "text")

    expected = b"".join(l + b"\n" for l in non_empty)  # kcat -P skips empty input lines
    assert out == expected, first_difference(out, expected)
    assert confluent_watermarks(broker.bootstrap, "text", [0]) == {0: (0, len(non_empty))}

    # and it is all still there after a clean restart
    broker.restart()
    out = kcat_consume(broker.bootstrap, "text")
    assert out == expected, "after restart: " + first_difference(out, expected)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kcat_really_compresses(broker, tmp_path, codec):
    """Old librdkafka (kcat from Debian) only compresses when ApiVersions lists Produce v0
    (KAFKA-18659); otherwise it logs "Broker does not support compression type" and
    sends every batch uncompressed, which the round trip above cannot see."""
    path = tmp_path / "input.txt"
    path.write_bytes(b"hello shardlog compression\n" * 800)
    # linger so that the 800 lines leave as few batches as possible: librdkafka sends a
    # batch uncompressed when compressing does not make it smaller, which is what happens
    # to a batch of one 27-byte line (seen in CI: the first line left alone, 94 bytes)
    args = [KCAT, "-P", "-b", broker.bootstrap, "-t", "z", "-p", "0", "-X", "acks=all",
            "-X", "linger.ms=500", "-z", codec, "-d", "msg"]
    with open(path, "rb") as f:
        r = subprocess.run(args, stdin=f, capture_output=True, timeout=120)
    log = r.stderr.decode(errors="replace")
    assert r.returncode == 0, log
    assert "does not support compression" not in log, log
    sent = [l for l in log.splitlines() if "Produce MessageSet" in l]
    pattern = re.compile(r"Produce MessageSet with (\d+) message\(s\).*, (\w+)\)\s*$")
    batches = [pattern.search(l) for l in sent]
    assert sent and all(batches), "\n".join(sent)
    compressed = sum(int(m.group(1)) for m in batches if m.group(2) == codec)
    plain = [m.group(0) for m in batches if m.group(2) != codec]
    # every batch of more than one line shrinks, so only lone lines may go uncompressed
    assert compressed >= 798 and all(" 1 message(s)" in p for p in plain), "\n".join(sent)
    assert kcat_consume(broker.bootstrap, "z") == path.read_bytes()
