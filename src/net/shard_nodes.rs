//! Each shard as a broker node of its own (`--shard-ports`). Pure: what clients are
//! told, from the configuration.
//!
//! Without the flag the broker is one node (`--node-id`): it leads every partition
//! and coordinates every group, and a request naming a partition another shard owns
//! crosses to it as a typed message. With it, shard `i` also listens alone on a port
//! of its own and is advertised as node `node_id + i`: Metadata names it the leader
//! of the partitions it owns, FindCoordinator the coordinator of its groups and
//! transactional ids, so Kafka clients, which route every request by partition
//! leader and coordinator, send each request to the shard that owns what it names,
//! and keep a fetch in flight per node (librdkafka and the Java consumer keep one per
//! broker connection). The shared listener still serves everything, as before; it is
//! the bootstrap address. Controller-side requests (CreateTopics, ElectLeaders, the
//! quorum) go to node `node_id` (shard 0), which is also what the shared listener
//! calls itself.
//!
//! Per-broker listings (ListGroups, ListTransactions, DescribeLogDirs), which admin
//! clients send to every node and concatenate, answer for the connection's shard
//! alone on a shard's own listener ([`listed_shards`]), else for every shard.

use std::ops::Range;

use crate::config::Config;
use crate::net::listeners::Listener;

/// A broker node as Metadata, DescribeCluster and FindCoordinator describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerNode {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

/// Whether `--shard-ports` is on (the ports are resolved by `main` before the shards
/// start).
pub fn enabled(config: &Config) -> bool {
    !config.shard_bound_ports.is_empty()
}

/// How many broker nodes clients are told about: one per shard with `--shard-ports`,
/// else one.
pub fn node_count(config: &Config) -> usize {
    config.shard_bound_ports.len().max(1)
}

/// The node id of `shard`: `--node-id` + shard with `--shard-ports`, else `--node-id`
/// for every shard.
pub fn node_of(config: &Config, shard: usize) -> i32 {
    if enabled(config) {
        config.node_id.wrapping_add(shard as i32)
    } else {
        config.node_id
    }
}

/// The shard whose node is `node_id`, `None` when no node of this broker has that id.
/// Without `--shard-ports` the one node is shard 0's (the control shard).
pub fn shard_of(config: &Config, node_id: i32) -> Option<usize> {
    let shards = node_count(config) as i64;
    let shard = i64::from(node_id) - i64::from(config.node_id);
    (0..shards).contains(&shard).then_some(shard as usize)
}

/// The broker nodes a client that came in through `listener` is told about, in node
/// id order: every shard's node at the listener's advertised host and the shard's
/// port with `--shard-ports`, else the one node at the listener's advertised address.
pub fn brokers(config: &Config, listener: &Listener) -> Vec<BrokerNode> {
    (0..node_count(config)).map(|shard| broker(config, listener, shard)).collect()
}

/// The node of `shard` as a client that came in through `listener` is told about it:
/// the shard's own port with `--shard-ports`, else the one node at the listener's
/// advertised address.
pub fn broker(config: &Config, listener: &Listener, shard: usize) -> BrokerNode {
    let port = match config.shard_bound_ports.get(shard) {
        Some(&port) => i32::from(port),
        None => listener.advertised_port,
    };
    BrokerNode { node_id: node_of(config, shard), host: listener.advertised_host.clone(), port }
}

/// Whether `name` (a broker config resource's name, an int as Kafka writes it) is the
/// id of one of this broker's nodes; with `--shard-ports` they share one config.
pub fn names_a_node(config: &Config, name: &str) -> bool {
    name.parse::<i32>()
        .ok()
        .filter(|id| id.to_string() == name)
        .is_some_and(|id| shard_of(config, id).is_some())
}

/// The broker configs that differ between the nodes of one broker, as node
/// `node_of(shard)` has them with `--shard-ports` (`node.id`, `broker.id`, and
/// `listeners` naming the shard's own port, `advertised.listeners` too when the
/// operator set one), as Metadata advertises each node (shard 0's node too: its
/// `listeners` name its own port, not the shared bootstrap port, which no node's
/// configs describe); empty without the flag. Every other broker config, static or
/// dynamic, is the one config all nodes share. `listeners` are the configured ones
/// (`Config::listeners`).
pub fn node_configs(
    config: &Config,
    listeners: &[Listener],
    shard: usize,
) -> Vec<(&'static str, String)> {
    let Some(own) = listeners.first().and_then(|l| shard_listener(config, l, shard)) else {
        return Vec::new();
    };
    let node = node_of(config, shard).to_string();
    let mut configs = Vec::with_capacity(4);
    // Unset, it stays null (listeners are then advertised as bound).
    let flags = crate::broker_config::BrokerDefaults::flags(config);
    if flags.static_value("advertised.listeners").is_some() {
        configs.push(("advertised.listeners", own.advertised_url()));
    }
    configs.push(("broker.id", node.clone()));
    configs.push(("listeners", own.bound_url()));
    configs.push(("node.id", node));
    configs
}

/// `shard`'s own listener with `--shard-ports`: the configured listener bound to the
/// shard's port, advertising it; `None` without the flag.
pub fn shard_listener(config: &Config, base: &Listener, shard: usize) -> Option<Listener> {
    let port = *config.shard_bound_ports.get(shard)?;
    let mut listener = base.clone();
    listener.bind.set_port(port);
    listener.advertised_port = i32::from(port);
    listener.shard = Some(shard);
    Some(listener)
}

/// The shards whose groups, transactions or logs a per-broker listing covers on a
/// connection through `listener`: its own shard on a shard's listener, every shard
/// on the shared one.
pub fn listed_shards(listener: &Listener, nr_shards: usize) -> Range<usize> {
    match listener.shard {
        Some(shard) => shard..shard + 1,
        None => 0..nr_shards,
    }
}

/// The ports of every shard's own listener for `--shard-ports base` on `nr_shards`
/// shards, `base + i` for shard i; `None` when the last would pass 65,535. `base` 0
/// is resolved by `main` (free ports), not here.
pub fn planned_ports(base: u16, nr_shards: usize) -> Option<Vec<u16>> {
    (0..nr_shards).map(|i| u16::try_from(usize::from(base) + i).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::listeners::SecurityProtocol;

    fn listener() -> Listener {
        Listener {
            protocol: SecurityProtocol::Plaintext,
            bind: "127.0.0.1:9092".parse().unwrap(),
            advertised_host: "kafka.example".into(),
            advertised_port: 19092,
            shard: None,
        }
    }

    fn config(node_id: i32, shard_ports: &[u16]) -> Config {
        let mut c = Config::from_args(["shardlog", "--node-id", &node_id.to_string()]);
        c.shard_bound_ports = shard_ports.to_vec();
        c
    }

    #[test]
    fn one_node_without_shard_ports() {
        let c = config(3, &[]);
        assert!(!enabled(&c));
        let node = BrokerNode { node_id: 3, host: "kafka.example".into(), port: 19092 };
        assert_eq!(brokers(&c, &listener()), vec![node.clone()]);
        assert_eq!(broker(&c, &listener(), 1), node);
        assert_eq!((node_of(&c, 0), node_of(&c, 1)), (3, 3));
        assert_eq!((shard_of(&c, 3), shard_of(&c, 4), shard_of(&c, 2)), (Some(0), None, None));
        assert_eq!(shard_listener(&c, &listener(), 0), None);
        assert_eq!(listed_shards(&listener(), 2), 0..2);
    }

    #[test]
    fn a_node_per_shard_with_shard_ports() {
        let c = config(3, &[9300, 9301]);
        assert!(enabled(&c));
        let expected = vec![
            BrokerNode { node_id: 3, host: "kafka.example".into(), port: 9300 },
            BrokerNode { node_id: 4, host: "kafka.example".into(), port: 9301 },
        ];
        assert_eq!(brokers(&c, &listener()), expected);
        assert_eq!(broker(&c, &listener(), 1), expected[1]);
        assert_eq!((node_of(&c, 0), node_of(&c, 1)), (3, 4));
        assert_eq!(
            (shard_of(&c, 3), shard_of(&c, 4), shard_of(&c, 5), shard_of(&c, 2)),
            (Some(0), Some(1), None, None)
        );
        let own = shard_listener(&c, &listener(), 1).unwrap();
        assert_eq!(
            (own.bind.port(), own.advertised_port, own.advertised_host.as_str(), own.shard),
            (9301, 9301, "kafka.example", Some(1))
        );
        assert_eq!(shard_listener(&c, &listener(), 2), None);
        assert_eq!(listed_shards(&own, 2), 1..2);
        assert_eq!(listed_shards(&listener(), 2), 0..2);
        // A node id near i32::MAX does not overflow the lookup.
        assert_eq!(shard_of(&config(i32::MAX, &[1, 2]), i32::MIN), None);
    }

    #[test]
    fn the_configs_naming_a_node_are_its_own_for_the_other_shards_nodes() {
        let c = config(3, &[9300, 9301]);
        let l = [listener()];
        let own = |advertised: Option<&str>| {
            let mut v: Vec<(&str, String)> =
                advertised.map(|a| ("advertised.listeners", a.to_string())).into_iter().collect();
            v.push(("broker.id", "4".to_string()));
            v.push(("listeners", "PLAINTEXT://127.0.0.1:9301".to_string()));
            v.push(("node.id", "4".to_string()));
            v
        };
        assert_eq!(node_configs(&c, &l, 1), own(None));
        let mut advertised = Config::from_args([
            "shardlog",
            "--node-id",
            "3",
            "--advertised-listener",
            "kafka.example:9092",
        ]);
        advertised.shard_bound_ports = vec![9300, 9301];
        assert_eq!(node_configs(&advertised, &l, 1), own(Some("PLAINTEXT://kafka.example:9301")));
        // Shard 0's node is --node-id on its own port too; one node: nothing.
        assert_eq!(
            node_configs(&c, &l, 0),
            vec![
                ("broker.id", "3".to_string()),
                ("listeners", "PLAINTEXT://127.0.0.1:9300".to_string()),
                ("node.id", "3".to_string()),
            ]
        );
        assert_eq!(node_configs(&config(3, &[]), &l, 1), vec![]);
        assert_eq!(node_configs(&c, &[], 1), vec![]);
    }

    #[test]
    fn broker_resources_name_one_of_this_brokers_nodes() {
        let mut c = config(3, &[]);
        let names = ["3", "4", "2", "5", "03", "+3", "", "x", "99999999999"];
        let known =
            |c: &Config| names.iter().filter(|n| names_a_node(c, n)).copied().collect::<Vec<_>>();
        assert_eq!(known(&c), ["3"]);
        c.shard_bound_ports = vec![9300, 9301];
        assert_eq!(known(&c), ["3", "4"]);
    }

    #[test]
    fn planned_ports_stop_at_the_last_port() {
        assert_eq!(planned_ports(9300, 3), Some(vec![9300, 9301, 9302]));
        assert_eq!(planned_ports(65534, 2), Some(vec![65534, 65535]));
        assert_eq!(planned_ports(65535, 2), None);
    }
}
