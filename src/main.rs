//! The `shardlog` binary: parse the config, raise RLIMIT_MEMLOCK, start one pinned
//! glommio executor per core, wait for SIGINT/SIGTERM, shut down cleanly (exit 0).

use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

use clap::Parser;
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::net::TcpListener;
use glommio::{LocalExecutorPoolBuilder, PoolPlacement};
use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};
use nix::sys::signal::{SigSet, Signal};

use shardlog::config::{Config, LogFormat};
use shardlog::net::limits::ConnectionLimits;
use shardlog::net::listener::Bound;
use shardlog::net::listeners::{Listener, SecurityProtocol};
use shardlog::net::shard_nodes;
use shardlog::security::plain::PlainUsers;
use shardlog::security::sasl::{Mechanism, SaslConfig};
use shardlog::security::tls::{ClientAuth, TlsServers};
use shardlog::shard::{serve::serve_mesh, Shard, ShardMessage};
use shardlog::shutdown::{Shutdown, Startup};
use shardlog::watchdog::{Heartbeats, Thresholds};

/// Capacity of each shard-to-shard channel, in messages.
const MESH_CHANNEL_CAPACITY: usize = 1024;

fn main() -> ExitCode {
    if std::env::args_os().nth(1).is_some_and(|a| a == "top") {
        let args = shardlog::top::TopArgs::parse_from(std::env::args_os().skip(1));
        return match shardlog::top::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("shardlog top: {e}");
                ExitCode::FAILURE
            }
        };
    }
    keep_freed_memory();
    shardlog::crash::install_hook();
    let mut config = Config::from_args(std::env::args_os());
    let filter = tracing_subscriber::EnvFilter::try_new(&config.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match config.log_format {
        LogFormat::Text => logs.with_ansi(ansi).init(),
        LogFormat::Json => logs.json().init(),
    }

    if let Err(e) = config.validate() {
        tracing::error!("{e}");
        return ExitCode::FAILURE;
    }
    raise_memlock();
    raise_nofile();
    if let Err(e) = std::fs::create_dir_all(&config.data_dir) {
        tracing::error!(dir = %config.data_dir.display(), error = %e, "cannot create the data dir");
        return ExitCode::FAILURE;
    }
    // One broker per data dir, as Kafka's log-dir `.lock`: two would overwrite each
    // other's segments. Held (by the open file) until the process exits.
    let _lock = match lock_data_dir(&config.data_dir) {
        Ok(lock) => lock,
        Err(e) => {
            tracing::error!(
                dir = %config.data_dir.display(),
                error = %e,
                "cannot lock the data dir; is another shardlog using it?"
            );
            return ExitCode::FAILURE;
        }
    };

    let cpus = core_affinity::get_core_ids().map(|c| c.len()).unwrap_or(1).max(1);
    let nr_shards = config.cores.unwrap_or(cpus).max(1);
    if nr_shards > cpus {
        // Thread-per-core: more executors than CPUs only makes them fight (and
        // glommio's pool misbehaves past a few times the CPU count).
        tracing::error!(nr_shards, cpus, "--cores must not exceed the CPUs this process may use");
        return ExitCode::FAILURE;
    }

    // A listener on port 0 gets an ephemeral port here, once, which every shard then
    // binds (each shard binding port 0 itself would get a port of its own). The
    // reserving sockets are bound, never listening, and held until the process exits.
    let mut _reserved_ports = Vec::new();
    // `validate` checked them. An ephemeral port is never one another listener or the
    // metrics endpoint (bound later) was given.
    let given: Vec<u16> =
        config.listeners().unwrap_or_default().iter().map(|l| l.bind.port()).collect();
    let metrics_port = config.metrics_addr().ok().flatten().map(|m| m.port());
    let avoid = |p: u16| given.contains(&p) || metrics_port == Some(p);
    for listener in config.listeners().unwrap_or_default() {
        let port = match listener.bind.port() {
            0 => match reserve_ephemeral_port_avoiding(listener.bind, &avoid) {
                Ok((socket, port)) => {
                    _reserved_ports.push(socket);
                    port
                }
                Err(e) => {
                    tracing::error!(listen = %listener.bind, error = %e, "cannot pick a port");
                    return ExitCode::FAILURE;
                }
            },
            port => port,
        };
        config.bound_ports.push(port);
    }
    if let Some(base) = config.shard_ports {
        match shard_ports(&config, base, nr_shards) {
            Ok((ports, reserved)) => {
                config.shard_bound_ports = ports;
                _reserved_ports.extend(reserved);
            }
            Err(e) => {
                tracing::error!("--shard-ports: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let config = Arc::new(config);
    let listeners: Arc<Vec<Listener>> = Arc::new(config.listeners().unwrap_or_default());
    let security = match sasl_config(&config) {
        Ok(security) => Arc::new(security),
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    // Read and checked now: a bad keystore stops the start.
    let tls = match config.tls() {
        Ok(tls) => tls.map(Arc::new),
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let sasl_ssl = listeners.iter().any(|l| l.protocol == SecurityProtocol::SaslSsl);
    if sasl_ssl && config.ssl_client_auth != ClientAuth::None {
        tracing::warn!(
            "--ssl-client-auth applies to SSL listeners only (as Kafka's broker-wide \
             ssl.client.auth); SASL_SSL listeners do not ask for client certificates"
        );
    }
    // One broker per listen address: with SO_REUSEPORT a second one would bind it too
    // and silently take half the connections. Held until the process exits.
    let mut _listen_locks = Vec::new();
    // With --shard-ports, each shard's own listener (validate: exactly one listener).
    let own: Vec<Listener> = (0..nr_shards)
        .filter_map(|shard| shard_nodes::shard_listener(&config, listeners.first()?, shard))
        .collect();
    for listener in listeners.iter().chain(&own) {
        match claim_listen_address(listener.bind) {
            Ok(lock) => _listen_locks.push(lock),
            Err(e) => {
                tracing::error!(listen = %listener.bind, "{e}");
                return ExitCode::FAILURE;
            }
        }
    }

    match shardlog::metadata::Catalog::init(&config.data_dir) {
        Ok(c) => {
            tracing::info!(
                cluster_id = %c.cluster_id,
                topics = c.topics.len(),
                "topic catalog loaded"
            )
        }
        Err(e) => {
            tracing::error!(
                dir = %config.data_dir.display(),
                error = %e,
                "cannot read or create the topic catalog"
            );
            return ExitCode::FAILURE;
        }
    }

    // Block the signals before any executor thread starts (threads inherit the mask),
    // so only the signal thread below receives them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    if let Err(e) = signals.thread_block() {
        tracing::error!(error = %e, "cannot block signals");
        return ExitCode::FAILURE;
    }

    let placement = PoolPlacement::MaxSpread(nr_shards, None);
    let names: Vec<String> = listeners.iter().map(|l| l.bound_url()).collect();
    tracing::info!(
        nr_shards,
        listeners = %names.join(","),
        data_dir = %config.data_dir.display(),
        io_memory = config.io_memory,
        ring_depth = config.ring_depth,
        produce_fanout = ?config.produce_fanout,
        spin_before_park_us = config.spin_before_park_us,
        shard_ports = ?config.shard_bound_ports,
        "starting shardlog"
    );

    let shutdown = Shutdown::default();
    let startup = Startup::default();
    let limits = ConnectionLimits::new(config.max_connections, config.max_connections_per_ip);
    let mesh = MeshBuilder::<ShardMessage, _>::full(nr_shards, MESH_CHANNEL_CAPACITY);
    let heartbeats = Heartbeats::new(nr_shards);
    let thresholds = Thresholds {
        warn: std::time::Duration::from_millis(config.stall_warn_ms),
        abort: std::time::Duration::from_millis(config.stall_abort_ms),
    };
    if let Err(e) = shardlog::watchdog::spawn(heartbeats.clone(), thresholds) {
        tracing::error!(error = %e, "cannot start the watchdog thread");
        return ExitCode::FAILURE;
    }
    let pool = {
        let config = config.clone();
        let shutdown = shutdown.clone();
        let mut builder = LocalExecutorPoolBuilder::new(placement)
            .name("shard")
            .io_memory(config.io_memory)
            .ring_depth(config.ring_depth);
        if config.spin_before_park_us > 0 {
            builder = builder
                .spin_before_park(std::time::Duration::from_micros(config.spin_before_park_us));
        }
        builder.on_all_shards(move || {
            run_shard(Lifecycle {
                config: config.clone(),
                heartbeats: heartbeats.clone(),
                mesh: mesh.clone(),
                shutdown: shutdown.clone(),
                startup: startup.clone(),
                limits: limits.clone(),
                listeners: listeners.clone(),
                security: security.clone(),
                tls: tls.clone(),
                nr_shards,
            })
        })
    };
    let pool = match pool {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the executors");
            return ExitCode::FAILURE;
        }
    };

    {
        let shutdown = shutdown.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || match signals.wait() {
                Ok(sig) => {
                    tracing::info!(signal = ?sig, "shutting down");
                    shutdown.request();
                }
                Err(e) => tracing::error!(error = %e, "waiting for signals failed"),
            })
            .ok();
    }

    let mut ok = true;
    for result in pool.join_all() {
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "shard failed");
                ok = false;
            }
            Err(e) => {
                tracing::error!(error = ?e, "shard panicked");
                ok = false;
            }
        }
    }
    if ok {
        tracing::info!("stopped cleanly");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What every shard is started with, shared by all of them.
struct Lifecycle {
    config: Arc<Config>,
    heartbeats: Arc<Heartbeats>,
    mesh: MeshBuilder<ShardMessage, glommio::channels::channel_mesh::Full>,
    shutdown: Shutdown,
    startup: Startup,
    limits: Arc<ConnectionLimits>,
    listeners: Arc<Vec<Listener>>,
    security: Arc<SaslConfig>,
    tls: Option<Arc<TlsServers>>,
    nr_shards: usize,
}

/// One shard's whole life: join the mesh, open its logs, wait until every shard has,
/// listen, serve, drain, close.
async fn run_shard(life: Lifecycle) -> Result<(), String> {
    let Lifecycle {
        config,
        heartbeats,
        mesh,
        shutdown,
        startup,
        limits,
        listeners,
        security,
        tls,
        nr_shards,
    } = life;
    let (senders, receivers) =
        mesh.join().await.map_err(|_| "joining the shard mesh failed".to_string())?;
    let id = senders.peer_id();
    // From here the watchdog sees this shard run (before, its slot counts from the
    // start, so a shard that never gets here is reported too).
    glommio::spawn_local(shardlog::watchdog::beat(heartbeats.clone(), id)).detach();
    let life = Started { config, shutdown, startup, limits, listeners, security, tls, nr_shards };
    let result = run_started_shard(life, id, senders, receivers).await;
    heartbeats.done(id);
    result
}

/// What [`run_started_shard`] needs of the [`Lifecycle`].
struct Started {
    config: Arc<Config>,
    shutdown: Shutdown,
    startup: Startup,
    limits: Arc<ConnectionLimits>,
    listeners: Arc<Vec<Listener>>,
    security: Arc<SaslConfig>,
    tls: Option<Arc<TlsServers>>,
    nr_shards: usize,
}

/// [`run_shard`] once the shard has joined the mesh as shard `id`.
async fn run_started_shard(
    life: Started,
    id: usize,
    senders: glommio::channels::channel_mesh::Senders<ShardMessage>,
    receivers: glommio::channels::channel_mesh::Receivers<ShardMessage>,
) -> Result<(), String> {
    let Started { config, shutdown, startup, limits, listeners, security, tls, nr_shards } = life;
    // The metrics endpoint answers /healthz (and /readyz: 503) during recovery too.
    let endpoint = (id == shardlog::shard::CONTROL_SHARD)
        .then(|| start_metrics_endpoint(&config, nr_shards, &startup, &shutdown))
        .flatten();
    let shard = match Shard::start(id, nr_shards, config.clone(), senders).await {
        Ok(shard) => shard,
        Err(e) => {
            // Make the other shards stop too: a broker without all its shards is broken.
            // Counted as drained (it has no connection), so they can close their logs.
            shutdown.request();
            shutdown.count_drained();
            return Err(format!("shard {id}: {e}"));
        }
    };
    let mesh_task = glommio::spawn_local(serve_mesh(shard.clone(), receivers));
    if let Some(endpoint) = endpoint {
        endpoint.set_shard(shard.clone());
    }
    let mut failure = None;
    let listener = if startup.ready(nr_shards, &shutdown).await {
        let mut bound = Vec::new();
        for listener in listeners.iter() {
            match TcpListener::bind(listener.bind) {
                Ok(socket) => bound.push(Bound {
                    socket,
                    listener: Rc::new(listener.clone()),
                    tls: tls.as_ref().and_then(|t| t.for_protocol(listener.protocol)),
                }),
                Err(e) => {
                    shutdown.request();
                    failure = Some(format!("shard {id}: cannot listen on {}: {e}", listener.bind));
                    break;
                }
            }
        }
        let own = listeners.first().and_then(|l| shard_nodes::shard_listener(&config, l, id));
        if let Some(own) = own.filter(|_| failure.is_none()) {
            match TcpListener::bind(own.bind) {
                Ok(socket) => bound.push(Bound {
                    socket,
                    tls: tls.as_ref().and_then(|t| t.for_protocol(own.protocol)),
                    listener: Rc::new(own),
                }),
                Err(e) => {
                    shutdown.request();
                    failure = Some(format!("shard {id}: cannot listen on {}: {e}", own.bind));
                }
            }
        }
        failure.is_none().then_some(bound)
    } else {
        // A signal during start-up, or another shard failed: close like a shutdown.
        None
    };
    let timers = glommio::spawn_local(shard.groups.clone().run_timers(shutdown.clone()));
    if let Some(listener) = listener {
        glommio::spawn_local(shardlog::shard::retention::run(shard.clone(), shutdown.clone()))
            .detach();
        glommio::spawn_local(shardlog::shard::producer_expiry::run(
            shard.clone(),
            shutdown.clone(),
        ))
        .detach();
        shardlog::shard::cleaner::spawn(shard.clone(), shutdown.clone());
        shardlog::shard::prefault::spawn(shard.clone(), shutdown.clone());
        glommio::spawn_local(shard.txns.clone().run_timers(shard.clone(), shutdown.clone()))
            .detach();
        tracing::info!(shard = id, listeners = listener.len(), "shard ready");
        shardlog::net::listener::run(shard.clone(), listener, limits, security, shutdown.clone())
            .await;
    }
    shutdown.drained(nr_shards).await;
    tracing::info!(shard = id, "all shards drained; closing logs");
    timers.await;
    shard.close_logs().await;
    shard.close_mesh();
    // Peers close their side once their logs are closed; don't wait forever.
    if glommio::timer::timeout(std::time::Duration::from_secs(10), async {
        mesh_task.await;
        Ok(())
    })
    .await
    .is_err()
    {
        tracing::warn!(shard = id, "mesh still open 10 s after closing; stopping anyway");
    }
    tracing::debug!(shard = id, "shard stopped");
    failure.map_or(Ok(()), Err)
}

/// How SASL listeners authenticate, from the flags: the enabled mechanisms and the
/// PLAIN users file (read now; an unreadable or malformed file stops the start).
fn sasl_config(config: &Config) -> Result<SaslConfig, String> {
    let mechanisms = Mechanism::parse_list(&config.sasl_enabled_mechanisms)?;
    let plain_users = match &config.sasl_plain_users_file {
        Some(path) => {
            PlainUsers::load(path).map_err(|e| format!("--sasl-plain-users-file: {e}"))?
        }
        None => PlainUsers::default(),
    };
    let sasl_listener = config.listeners()?.iter().any(|l| l.protocol.is_sasl());
    if sasl_listener && mechanisms.contains(&Mechanism::Plain) && plain_users.is_empty() {
        tracing::warn!(
            "SASL/PLAIN is enabled without users (--sasl-plain-users-file): every PLAIN login \
             will fail"
        );
    }
    Ok(SaslConfig {
        mechanisms,
        plain_users,
        max_reauth: std::time::Duration::from_millis(config.connections_max_reauth_ms),
    })
}

/// Starts the `--metrics-listen` endpoint on this (the control) shard, unless it is
/// off. An address that cannot be bound is logged and the broker runs without it.
fn start_metrics_endpoint(
    config: &Config,
    nr_shards: usize,
    startup: &Startup,
    shutdown: &Shutdown,
) -> Option<std::rc::Rc<shardlog::metrics::http::Endpoint>> {
    let Ok(Some(addr)) = config.metrics_addr() else {
        return None;
    };
    match shardlog::metrics::http::bind(addr) {
        Ok(listener) => {
            let bound = listener.local_addr().map_or(addr.to_string(), |a| a.to_string());
            tracing::info!(metrics_listen = %bound, "metrics endpoint: /metrics, /healthz, /readyz");
            let endpoint = shardlog::metrics::http::Endpoint::new(
                nr_shards,
                startup.clone(),
                shutdown.clone(),
            );
            glommio::spawn_local(shardlog::metrics::http::run(endpoint.clone(), listener)).detach();
            Some(endpoint)
        }
        Err(e) => {
            tracing::warn!(
                metrics_listen = %addr,
                error = %e,
                "cannot listen for metrics; running without the metrics endpoint"
            );
            None
        }
    }
}

/// Makes sure no other process listens on `addr`, and keeps another shardlog from
/// starting on its port while this one runs: binds the abstract Unix socket
/// `@shardlog-listen-port-<port>` (released by the kernel when the process exits,
/// however it exits), then probes `addr` ([`probe_listen`]) and looks for another
/// process listening there with SO_REUSEPORT ([`shardlog::net::port_sharers`]), which
/// the probe cannot see. Returns the socket to hold.
fn claim_listen_address(
    addr: std::net::SocketAddr,
) -> Result<std::os::unix::net::UnixListener, String> {
    use std::os::linux::net::SocketAddrExt;
    // By port, not address: 0.0.0.0:9092 and 127.0.0.1:9092 overlap.
    let name = format!("shardlog-listen-port-{}", addr.port());
    let abstract_addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        .map_err(|e| format!("cannot name the listen lock {name}: {e}"))?;
    let lock = std::os::unix::net::UnixListener::bind_addr(&abstract_addr).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            format!("another shardlog is already listening on {addr}")
        } else {
            format!("cannot take the listen lock {name}: {e}")
        }
    })?;
    probe_listen(addr).map_err(|e| {
        format!("cannot listen on {addr}: {e} (is another broker or process using it?)")
    })?;
    // The probe binds beside any process of this user that listens with SO_REUSEPORT
    // too, and the kernel would then hand that process connections meant for us. A
    // broker killed a moment ago leaves such sockets for 100-200 ms: waited out.
    if let Some(warning) =
        shardlog::net::port_sharers::check(addr, std::time::Duration::from_secs(2))?
    {
        tracing::warn!(listen = %addr, "{warning}");
    }
    Ok(lock)
}

/// The port of every shard's own listener (`--shard-ports base`), by shard id, and the
/// sockets holding them until the process exits. Errors: a listener advertising
/// another port than it binds (a port mapping the shard ports would not follow), a
/// negative `--node-id` or one leaving no id for the last shard, a port past 65,535, a
/// port the shared listeners or the metrics endpoint use, no free port.
fn shard_ports(
    config: &Config,
    base: u16,
    nr_shards: usize,
) -> Result<(Vec<u16>, Vec<std::net::TcpListener>), String> {
    let listeners = config.listeners()?;
    let Some(listener) = listeners.first() else {
        return Err("no listener".into());
    };
    if listener.advertised_port != i32::from(listener.bind.port()) {
        return Err(format!(
            "the listener advertises port {} but binds {}: shard ports are advertised as \
             bound, so they cannot be reached through a port mapping",
            listener.advertised_port,
            listener.bind.port()
        ));
    }
    if config.node_id < 0 {
        return Err(format!("--node-id {} is negative", config.node_id));
    }
    if config.node_id.checked_add(nr_shards as i32 - 1).is_none() {
        return Err(format!(
            "--node-id {} leaves no node id for shard {}",
            config.node_id,
            nr_shards - 1
        ));
    }
    let metrics = config.metrics_addr()?.map(|m| m.port());
    let taken = |p: u16| listeners.iter().any(|l| l.bind.port() == p) || metrics == Some(p);
    let mut reserved = Vec::new();
    let ports = if base == 0 {
        let mut any = listener.bind;
        any.set_port(0);
        let mut ports = Vec::with_capacity(nr_shards);
        for _ in 0..nr_shards {
            let (socket, port) = reserve_ephemeral_port_avoiding(any, &taken)
                .map_err(|e| format!("cannot pick a port: {e}"))?;
            reserved.push(socket);
            ports.push(port);
        }
        ports
    } else {
        let ports = shard_nodes::planned_ports(base, nr_shards)
            .ok_or_else(|| format!("{base} + {nr_shards} shards passes port 65535"))?;
        if let Some(port) = ports.iter().find(|&&p| taken(p)) {
            return Err(format!("port {port} is also --listen's or --metrics-listen's"));
        }
        // Held from now on, as ephemeral ones are, so that nothing bound before the
        // shards (the metrics endpoint on port 0) takes one of them.
        for &port in &ports {
            let mut addr = listener.bind;
            addr.set_port(port);
            let socket = bind_reusable(addr).map_err(|e| format!("cannot bind {addr}: {e}"))?;
            reserved.push(std::net::TcpListener::from(socket));
        }
        ports
    };
    Ok((ports, reserved))
}

/// Binds `addr` with SO_REUSEADDR and SO_REUSEPORT as the shards will, without
/// listening (so no client can be accepted and then reset by it), then closes: fails
/// when another process listens there without SO_REUSEPORT (or as another user), not
/// for the TIME_WAIT connections of an earlier run.
fn probe_listen(addr: std::net::SocketAddr) -> nix::Result<()> {
    bind_reusable(addr).map(drop)
}

/// Picks the port for a listener given port 0 (`addr`'s port): binds `addr` as
/// [`probe_listen`] does and returns the socket, which holds the port against other
/// processes until it is closed (the shards, with SO_REUSEPORT, bind it beside it),
/// and the port the kernel chose.
fn reserve_ephemeral_port(
    addr: std::net::SocketAddr,
) -> std::io::Result<(std::net::TcpListener, u16)> {
    // A std listener type only to own the socket and read its address: never listened.
    let socket = std::net::TcpListener::from(bind_reusable(addr)?);
    let port = socket.local_addr()?.port();
    Ok((socket, port))
}

/// [`reserve_ephemeral_port`] for `addr` (port 0), skipping ports `avoid` names: the
/// ones given to a listener or the metrics endpoint that bind later (a harness that
/// picked a free port by binding and closing it may see it handed out again). The
/// skipped sockets are held until a port is found, so the kernel does not repeat them.
fn reserve_ephemeral_port_avoiding(
    addr: std::net::SocketAddr,
    avoid: &dyn Fn(u16) -> bool,
) -> std::io::Result<(std::net::TcpListener, u16)> {
    let mut skipped = Vec::new();
    loop {
        let (socket, port) = reserve_ephemeral_port(addr)?;
        if !avoid(port) {
            return Ok((socket, port));
        }
        skipped.push(socket);
        if skipped.len() > 16 {
            return Err(std::io::Error::other("every port offered is given to another listener"));
        }
    }
}

/// A TCP socket with SO_REUSEADDR and SO_REUSEPORT, bound to `addr`, not listening.
fn bind_reusable(addr: std::net::SocketAddr) -> nix::Result<std::os::fd::OwnedFd> {
    use nix::sys::socket::{
        bind, setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn,
        SockaddrIn6,
    };
    let family = if addr.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
    let fd = socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    setsockopt(&fd, sockopt::ReusePort, &true)?;
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    match addr {
        std::net::SocketAddr::V4(a) => bind(raw, &SockaddrIn::from(a))?,
        std::net::SocketAddr::V6(a) => bind(raw, &SockaddrIn6::from(a))?,
    }
    Ok(fd)
}

/// Takes an exclusive, non-blocking `flock` on `<data-dir>/.lock`.
fn lock_data_dir(dir: &std::path::Path) -> std::io::Result<nix::fcntl::Flock<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".lock"))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, errno)| std::io::Error::from(errno))
}

/// Every partition keeps its segment files open: raise the soft open-files limit to
/// the hard one and log what we got.
fn raise_nofile() {
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => tracing::info!(nofile = hard, "RLIMIT_NOFILE raised"),
            Err(e) => tracing::warn!(nofile = soft, error = %e, "cannot raise RLIMIT_NOFILE"),
        },
        Ok((soft, _)) => tracing::info!(nofile = soft, "RLIMIT_NOFILE"),
        Err(e) => tracing::warn!(error = %e, "cannot read RLIMIT_NOFILE"),
    }
}

/// Largest allocation glibc serves from its heaps instead of a fresh `mmap`, in bytes
/// (glibc's ceiling for `M_MMAP_THRESHOLD` on 64-bit).
const MMAP_THRESHOLD_BYTES: i32 = 32 << 20;
/// Free memory glibc keeps at the top of a heap before giving it back to the kernel.
const TRIM_THRESHOLD_BYTES: i32 = 1 << 30;

/// Makes glibc keep and reuse freed blocks: request read buffers (up to the largest
/// frame), DMA write buffers and cache arenas are allocated and freed at the rate data
/// moves, and by default the large ones are `mmap`ed and `munmap`ed each time, so every
/// request pays for page faults, the kernel zeroing fresh pages, and TLB shootdowns on
/// every core when they are unmapped. Memory freed this way stays in the process (peak
/// usage, not growth) and is reused by the next request.
fn keep_freed_memory() {
    // SAFETY: mallopt only changes allocator tunables; called before any other thread.
    unsafe {
        nix::libc::mallopt(nix::libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        nix::libc::mallopt(nix::libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}

/// glommio registers its io memory with io_uring when RLIMIT_MEMLOCK allows; raise
/// the soft limit as far as we may and log what we got.
fn raise_memlock() {
    let before = getrlimit(Resource::RLIMIT_MEMLOCK);
    let raised =
        setrlimit(Resource::RLIMIT_MEMLOCK, RLIM_INFINITY, RLIM_INFINITY).or_else(
            |_| match before {
                Ok((_, hard)) => setrlimit(Resource::RLIMIT_MEMLOCK, hard, hard),
                Err(e) => Err(e),
            },
        );
    match (raised, getrlimit(Resource::RLIMIT_MEMLOCK)) {
        (_, Ok((soft, _))) if soft == RLIM_INFINITY => {
            tracing::info!("RLIMIT_MEMLOCK raised to unlimited")
        }
        (_, Ok((soft, hard))) => tracing::info!(
            memlock_bytes = soft,
            memlock_hard_bytes = hard,
            "RLIMIT_MEMLOCK could not be raised further; glommio skips buffer registration \
             if its io memory does not fit"
        ),
        (_, Err(e)) => tracing::warn!(error = %e, "cannot read RLIMIT_MEMLOCK"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ephemeral_port_skips_the_ports_to_avoid() {
        let addr: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        // Refuse the first two ports offered: the third is returned, and differs.
        let offered = std::cell::RefCell::new(Vec::new());
        let avoid = |p: u16| {
            offered.borrow_mut().push(p);
            offered.borrow().len() <= 2
        };
        let (socket, port) = reserve_ephemeral_port_avoiding(addr, &avoid).unwrap();
        let offered = offered.borrow().clone();
        assert_eq!(offered.len(), 3);
        assert_eq!(port, offered[2]);
        assert!(!offered[..2].contains(&port));
        assert_eq!(socket.local_addr().unwrap().port(), port);
        // Every port refused: an error, not a loop.
        assert!(reserve_ephemeral_port_avoiding(addr, &|_| true).is_err());
    }
}
