"""`fetch_cycle.py` on a hand-written trace (`python3 -m pytest perf/test_fetch_cycle.py`)."""

import fetch_cycle as fc

TRACE = """\
 rdk:broker0  10 [000]   100.000000: syscalls:sys_enter_sendmsg: fd: 0x00000006
     shard-1  20 [001]   100.000050: syscalls:sys_exit_recvfrom: 0x58
     shard-1  20 [001]   100.000150: syscalls:sys_enter_sendmsg: fd: 0x0000000b
 rdk:broker0  10 [000]   100.000300: syscalls:sys_exit_recvmsg: 0x80000
     shard-1  20 [001]   100.000550: syscalls:sys_exit_sendmsg: 0x100000
 rdk:broker0  10 [000]   100.000560: syscalls:sys_exit_recvmsg: 0xfffffffffffffff5
 rdk:broker0  10 [000]   100.000600: syscalls:sys_exit_recvmsg: 0x80000
 rdk:broker0  10 [000]   100.000900: syscalls:sys_enter_sendmsg: fd: 0x00000006
     shard-1  20 [001]   100.000950: syscalls:sys_exit_recvfrom: 0x58
     shard-1  20 [001]   100.001000: syscalls:sys_enter_sendmsg: fd: 0x0000000b
     shard-1  20 [001]   100.001010: syscalls:sys_exit_sendmsg: 0x40
 rdk:broker0  10 [000]   100.001020: syscalls:sys_exit_recvmsg: 0x40
 rdk:broker0  10 [000]   100.001100: syscalls:sys_enter_sendmsg: fd: 0x00000006
"""


def test_a_cycle_is_split_into_its_steps_and_small_responses_are_left_out():
    cs = fc.cycles(fc.parse(TRACE.splitlines()))
    assert len(cs) == 1  # the second cycle moved 64 bytes
    c = cs[0]
    us = lambda s: round(s * 1e6)  # noqa: E731
    assert [us(c.to_broker), us(c.broker_work), us(c.broker_send), us(c.client_tail),
            us(c.client_work), us(c.total)] == [50, 100, 400, 50, 300, 900]
    assert c.bytes == 1 << 20  # two reads of 512 KiB; EAGAIN (-11) is not counted


def test_the_summary_gives_each_steps_share_of_the_cycle():
    lines = fc.summary(fc.cycles(fc.parse(TRACE.splitlines())))
    assert lines[0] == "1 fetch cycles, 1.00 MiB per response on average; microseconds:"
    assert lines[3].split()[-4:] == ["100", "100", "100", "11.1%"]
    assert fc.summary([]) == ["no fetch cycle found"]
