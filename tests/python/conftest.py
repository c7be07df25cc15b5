"""pytest fixtures: the real shardlog binary on a free port with a fresh data dir.

    broker          a started broker with the default flags (+ --cores 2)
    broker_factory  broker_factory("--flush", "always", ...) -> started Broker with extra flags

The binary is $SHARDLOG_BIN (default: target/release/shardlog). Each broker's stderr is
written to <tmp>/broker-N.stderr.log and printed when a test fails. At teardown every
broker still running is stopped with SIGTERM and must exit 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import Broker, BrokerError, shardlog_bin  # noqa: E402


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def pytest_report_header(config):
    b = shardlog_bin()
    return f"shardlog binary: {b} ({'present' if b.is_file() else 'MISSING'})"


@pytest.fixture
def broker_factory(request, tmp_path):
    brokers = []

    def make(*extra_args: str, cores: int = 2) -> Broker:
        b = Broker(shardlog_bin(), tmp_path / f"broker{len(brokers)}", cores=cores, extra_args=extra_args)
        brokers.append(b)
        b.start()
        return b

    yield make

    failed = any(getattr(request.node, f"rep_{w}", None) is not None and getattr(request.node, f"rep_{w}").failed
                 for w in ("setup", "call"))
    errors = []
    for b in brokers:
        if b.running():
            try:
                b.stop()
            except BrokerError as e:
                errors.append(str(e))
        if failed and b.stderr_paths:
            # pytest shows this as "Captured stdout teardown" of the failed test
            print(f"\n===== shardlog stderr ({b.bootstrap}, data dir {b.data_dir}) =====")
            print(b.describe_logs(max_bytes=20000))
    if errors and not failed:
        pytest.fail("broker did not shut down cleanly:\n" + "\n".join(errors), pytrace=False)


@pytest.fixture
def broker(broker_factory) -> Broker:
    return broker_factory()


def pytest_sessionfinish(session, exitstatus):
    """Rewrite tests/compat/README.md when every cell of the compatibility matrix ran."""
    compat = sys.modules.get("test_compat")
    if compat is None or not compat.CELLS or len(compat.RESULTS) != len(compat.CELLS):
        return
    ordered = {c["id"]: compat.RESULTS[c["id"]] for c in compat.CELLS}
    (compat.COMPAT / "README.md").write_text(compat.render(ordered))
