//! Other processes listening on a port shardlog is about to bind: every shard binds its
//! listen address with SO_REUSEPORT, and the kernel lets any process of the same user
//! that also sets SO_REUSEPORT join that group, after which it silently receives part
//! of the new connections (the bind probe in `main` succeeds beside it). The listening
//! sockets are read from `/proc/net/tcp` and `/proc/net/tcp6` (the format of the
//! kernel's `tcp4_seq_show` / `tcp6_seq_show`: hex addresses as the kernel stores them,
//! hex port in host order, state `0A` for LISTEN), and the processes holding them from
//! `/proc/<pid>/fd`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A TCP socket in the LISTEN state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listening {
    /// The address it is bound to (unspecified for a wildcard).
    pub addr: SocketAddr,
    /// Its socket inode (the `socket:[inode]` of the fds that hold it).
    pub inode: u64,
}

/// `st` of a listening socket in `/proc/net/tcp*`.
const TCP_LISTEN: &str = "0A";

/// The LISTEN sockets of one `/proc/net/tcp` (`v6` false) or `/proc/net/tcp6` table;
/// lines that do not parse (the header) are skipped.
pub fn parse_table(table: &str, v6: bool) -> Vec<Listening> {
    table.lines().filter_map(|line| parse_line(line, v6)).collect()
}

fn parse_line(line: &str, v6: bool) -> Option<Listening> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    if fields.len() < 10 || fields[3] != TCP_LISTEN {
        return None;
    }
    let (ip, port) = fields[1].split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = if v6 { IpAddr::V6(parse_v6(ip)?) } else { IpAddr::V4(parse_v4(ip)?) };
    let inode = fields[9].parse().ok()?;
    Some(Listening { addr: SocketAddr::new(ip, port), inode })
}

/// One address word: the kernel prints the 32 bits as they lie in memory read as a
/// native integer (`%08X`), so its native bytes are the address bytes.
fn word(hex: &str) -> Option<[u8; 4]> {
    if hex.len() != 8 {
        return None;
    }
    Some(u32::from_str_radix(hex, 16).ok()?.to_ne_bytes())
}

fn parse_v4(hex: &str) -> Option<Ipv4Addr> {
    word(hex).map(Ipv4Addr::from)
}

fn parse_v6(hex: &str) -> Option<Ipv6Addr> {
    if hex.len() != 32 || !hex.is_ascii() {
        return None;
    }
    let mut bytes = [0u8; 16];
    for i in 0..4 {
        bytes[4 * i..4 * i + 4].copy_from_slice(&word(&hex[8 * i..8 * i + 8])?);
    }
    Some(Ipv6Addr::from(bytes))
}

/// Whether a listener on `a` and one on `b` receive some of the same connections: the
/// same port, and the same address or a wildcard covering the other (`::` is taken to
/// cover IPv4 too, as it does unless the socket is IPV6_V6ONLY, which the tables do
/// not show; an IPv4-mapped IPv6 address is its IPv4 address).
pub fn overlaps(a: SocketAddr, b: SocketAddr) -> bool {
    if a.port() != b.port() {
        return false;
    }
    let canonical = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match (canonical(a.ip()), canonical(b.ip())) {
        (IpAddr::V4(x), IpAddr::V4(y)) => x == y || x.is_unspecified() || y.is_unspecified(),
        (IpAddr::V6(x), IpAddr::V6(y)) => x == y || x.is_unspecified() || y.is_unspecified(),
        (IpAddr::V6(x), IpAddr::V4(_)) | (IpAddr::V4(_), IpAddr::V6(x)) => x.is_unspecified(),
    }
}

/// The listening sockets in `listening` that overlap `addr` ([`overlaps`]) and are not
/// among `own` (this process's socket inodes).
pub fn sharers(addr: SocketAddr, listening: &[Listening], own: &[u64]) -> Vec<Listening> {
    listening
        .iter()
        .filter(|l| overlaps(addr, l.addr) && !own.contains(&l.inode))
        .copied()
        .collect()
}

/// The sockets of other processes listening where `addr` would receive connections, with
/// who holds them (`pid (comm)`; `None` when no process's fd table has the socket: a
/// process that has just exited, whose sockets the kernel closes a moment later).
/// Errors: `/proc/net/tcp` cannot be read.
pub fn find(addr: SocketAddr) -> std::io::Result<Vec<(Listening, Option<String>)>> {
    let mut listening = parse_table(&std::fs::read_to_string("/proc/net/tcp")?, false);
    // No IPv6 on the machine: no tcp6 table.
    if let Ok(t6) = std::fs::read_to_string("/proc/net/tcp6") {
        listening.extend(parse_table(&t6, true));
    }
    let own = socket_inodes("/proc/self/fd");
    let found = sharers(addr, &listening, &own);
    Ok(found.into_iter().map(|l| (l, holder(l.inode))).collect())
}

/// What to do about the sockets [`find`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// None: bind.
    Clear,
    /// Only sockets no process holds: look again shortly (after a `kill -9` the
    /// dead broker's listening sockets outlive it by 100-200 ms while the kernel
    /// tears down its io_uring instances).
    Wait,
    /// A process listens there: refuse, with this reason.
    Refuse(String),
}

/// The verdict on `found` for `addr` ([`Verdict`]).
pub fn verdict(addr: SocketAddr, found: &[(Listening, Option<String>)]) -> Verdict {
    match found.iter().find(|(_, holder)| holder.is_some()) {
        Some((other, Some(holder))) => Verdict::Refuse(format!(
            "cannot listen on {addr}: {holder} already listens on {} with SO_REUSEPORT and \
             would take connections meant for this broker",
            other.addr
        )),
        _ if found.is_empty() => Verdict::Clear,
        _ => Verdict::Wait,
    }
}

/// Checks that no other process listens where `addr` would receive connections
/// ([`find`], [`verdict`]), waiting up to `orphan_wait` for sockets no process holds
/// to close. Errors: the reason to refuse to start. `/proc/net/tcp` unreadable is not
/// an error: `Ok(Some(warning))`.
pub fn check(addr: SocketAddr, orphan_wait: std::time::Duration) -> Result<Option<String>, String> {
    let deadline = std::time::Instant::now() + orphan_wait;
    loop {
        let found = match find(addr) {
            Ok(found) => found,
            Err(e) => {
                return Ok(Some(format!(
                    "cannot read /proc/net/tcp to check that no other process shares the \
                     port: {e}"
                )))
            }
        };
        match verdict(addr, &found) {
            Verdict::Clear => return Ok(None),
            Verdict::Refuse(reason) => return Err(reason),
            Verdict::Wait if std::time::Instant::now() >= deadline => {
                return Err(format!(
                    "cannot listen on {addr}: a socket no process holds still listens on {} \
                     with SO_REUSEPORT after {} ms (a process that exited and whose sockets \
                     the kernel has not closed yet?)",
                    found[0].0.addr,
                    orphan_wait.as_millis()
                ))
            }
            Verdict::Wait => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

/// The socket inodes of the fds in `dir` (`/proc/<pid>/fd`); none when it cannot be read.
fn socket_inodes(dir: &str) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| socket_inode(target.to_str()?))
        .collect()
}

/// `socket:[123]` -> 123.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// `pid (comm)` of a process holding the socket `inode`, from the fd tables this user
/// may read; `None` when none has it.
fn holder(inode: u64) -> Option<String> {
    let procs = std::fs::read_dir("/proc").ok()?;
    for entry in procs.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        if socket_inodes(&format!("/proc/{pid}/fd")).contains(&inode) {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            return Some(format!("pid {pid} ({})", comm.trim()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as a little-endian kernel prints them (x86_64): 127.0.0.1:9092 and
    // 0.0.0.0:22 listening, one established connection, and in tcp6 [::]:9093 and
    // [::1]:8080 listening.
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0000000000000000 100 0 0 10 0
   2: 0100007F:2384 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:2385 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5252 1 0000000000000000 100 0 0 10 0
";

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn listening_sockets_are_read_from_both_tables() {
        assert_eq!(
            parse_table(TCP, false),
            vec![
                Listening { addr: sa("127.0.0.1:9092"), inode: 4242 },
                Listening { addr: sa("0.0.0.0:22"), inode: 17 },
            ]
        );
        assert_eq!(
            parse_table(TCP6, true),
            vec![
                Listening { addr: sa("[::]:9093"), inode: 5151 },
                Listening { addr: sa("[::1]:8080"), inode: 5252 },
            ]
        );
        // The header, a short line, a bad port: skipped.
        assert_eq!(parse_table("0: 0100007F:ZZZZ 00000000:0000 0A a b c d e 9", false), vec![]);
    }

    #[test]
    fn overlapping_means_same_port_and_a_covering_address() {
        assert!(overlaps(sa("127.0.0.1:9092"), sa("127.0.0.1:9092")));
        assert!(overlaps(sa("127.0.0.1:9092"), sa("0.0.0.0:9092")));
        assert!(overlaps(sa("0.0.0.0:9092"), sa("10.1.2.3:9092")));
        assert!(overlaps(sa("127.0.0.1:9092"), sa("[::]:9092")));
        assert!(overlaps(sa("127.0.0.1:9092"), sa("[::ffff:127.0.0.1]:9092")));
        assert!(overlaps(sa("[::1]:9092"), sa("[::]:9092")));
        assert!(!overlaps(sa("127.0.0.1:9092"), sa("127.0.0.1:9093")));
        assert!(!overlaps(sa("127.0.0.1:9092"), sa("127.0.0.2:9092")));
        assert!(!overlaps(sa("0.0.0.0:9092"), sa("[::1]:9092")));
        assert!(!overlaps(sa("[::1]:9092"), sa("[::2]:9092")));
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn sharers_leave_out_other_ports_and_this_process_own_sockets() {
        let mut all = parse_table(TCP, false);
        all.extend(parse_table(TCP6, true));
        assert_eq!(
            sharers(sa("127.0.0.1:9092"), &all, &[]),
            vec![Listening { addr: sa("127.0.0.1:9092"), inode: 4242 }]
        );
        assert_eq!(sharers(sa("127.0.0.1:9092"), &all, &[4242]), vec![]);
        assert_eq!(
            sharers(sa("127.0.0.1:9093"), &all, &[]),
            vec![Listening { addr: sa("[::]:9093"), inode: 5151 }]
        );
        assert_eq!(sharers(sa("127.0.0.1:8080"), &all, &[]), vec![]);
        assert_eq!(socket_inode("socket:[5151]"), Some(5151));
        assert_eq!(socket_inode("pipe:[5151]"), None);
    }

    #[test]
    fn a_listener_of_this_process_is_found_with_its_holder_by_others_only() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Our own socket is not another process's.
        assert_eq!(find(addr).unwrap(), vec![]);
        let own = socket_inodes("/proc/self/fd");
        let table = parse_table(&std::fs::read_to_string("/proc/net/tcp").unwrap(), false);
        let ours: Vec<_> = table.iter().filter(|l| l.addr == addr).collect();
        assert_eq!(ours.len(), 1);
        assert!(own.contains(&ours[0].inode));
        assert_eq!(
            holder(ours[0].inode).unwrap(),
            format!("pid {} ({})", std::process::id(), {
                std::fs::read_to_string("/proc/self/comm").unwrap().trim().to_string()
            })
        );
    }

    #[test]
    fn a_held_socket_refuses_an_unheld_one_waits_none_binds() {
        let addr = sa("127.0.0.1:9092");
        let theirs = Listening { addr: sa("0.0.0.0:9092"), inode: 7 };
        let orphan = Listening { addr: sa("127.0.0.1:9092"), inode: 8 };
        assert_eq!(verdict(addr, &[]), Verdict::Clear);
        assert_eq!(verdict(addr, &[(orphan, None)]), Verdict::Wait);
        let refused = Verdict::Refuse(
            "cannot listen on 127.0.0.1:9092: pid 12 (python) already listens on 0.0.0.0:9092 \
             with SO_REUSEPORT and would take connections meant for this broker"
                .into(),
        );
        assert_eq!(
            verdict(addr, &[(orphan, None), (theirs, Some("pid 12 (python)".into()))]),
            refused
        );
    }
}
