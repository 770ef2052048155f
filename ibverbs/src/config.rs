//! The device's configuration, read from the environment when it is opened.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `ROCENIC_BACKEND` | `model` (the behavioural NIC; the only one served) | `model` |
//! | `ROCENIC_WIRE` | `udp:LOCAL_PORT:PEER_PORT`: bind `127.0.0.1:LOCAL_PORT`, send frames to `127.0.0.1:PEER_PORT` | none: the port is down, no frame leaves |
//! | `ROCENIC_MAC` | the port's MAC, `02:00:00:00:00:01` | `02:00:00:00:00:01` |
//! | `ROCENIC_PEER_MAC` | the peer's MAC, used for every destination instead of asking by ARP (needed when the peer does not run its NIC while we connect, as `ibv_rc_pingpong`'s client while the server moves to RTR) | none: ARP |
//! | `ROCENIC_IP` | the port's IPv4 address (GID index 1 is `::ffff:IP`) | `10.0.0.1` |
//! | `ROCENIC_POLL_US` | simulated time an empty `ibv_poll_cq` lets pass, microseconds | `10` |
//! | `ROCENIC_EVENT_TIMEOUT_MS` | longest wait of `ibv_get_cq_event` and of the peer's ARP answer | `60000` |

use std::net::Ipv4Addr;
use std::time::Duration;

/// Which device model serves the verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// The behavioural model (`rocenic-model`).
    Model,
}

/// The wire the port is cabled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// No cable: the port is down.
    None,
    /// One Ethernet frame per UDP datagram on loopback.
    Udp {
        /// Our port on 127.0.0.1.
        local: u16,
        /// The peer's port on 127.0.0.1.
        peer: u16,
    },
}

/// The whole configuration of `rocenic0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `ROCENIC_BACKEND`.
    pub backend: BackendKind,
    /// `ROCENIC_WIRE`.
    pub wire: Wire,
    /// `ROCENIC_MAC`.
    pub mac: [u8; 6],
    /// `ROCENIC_IP`.
    pub ip: [u8; 4],
    /// `ROCENIC_PEER_MAC`.
    pub peer_mac: Option<[u8; 6]>,
    /// `ROCENIC_POLL_US`.
    pub poll: Duration,
    /// `ROCENIC_EVENT_TIMEOUT_MS`.
    pub event_timeout: Duration,
}

impl Config {
    /// Reads the configuration through `get` (the environment in the library); an
    /// unparsable value is an error naming the variable.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let backend = match get("ROCENIC_BACKEND").as_deref() {
            None | Some("model") => BackendKind::Model,
            Some(other) => {
                return Err(format!(
                    "ROCENIC_BACKEND={other:?}: only \"model\" is served by this library"
                ))
            }
        };
        let wire = match get("ROCENIC_WIRE") {
            None => Wire::None,
            Some(s) => parse_wire(&s).map_err(|e| format!("ROCENIC_WIRE={s:?}: {e}"))?,
        };
        let mac = match get("ROCENIC_MAC") {
            None => [2, 0, 0, 0, 0, 1],
            Some(s) => parse_mac(&s).ok_or_else(|| {
                format!("ROCENIC_MAC={s:?}: expected six hex bytes, e.g. 02:00:00:00:00:01")
            })?,
        };
        let peer_mac = match get("ROCENIC_PEER_MAC") {
            None => None,
            Some(s) => Some(parse_mac(&s).ok_or_else(|| {
                format!("ROCENIC_PEER_MAC={s:?}: expected six hex bytes, e.g. 02:00:00:00:00:02")
            })?),
        };
        let ip = match get("ROCENIC_IP") {
            None => [10, 0, 0, 1],
            Some(s) => s
                .parse::<Ipv4Addr>()
                .map_err(|_| format!("ROCENIC_IP={s:?}: expected an IPv4 address"))?
                .octets(),
        };
        let number = |name: &str, default: u64| -> Result<u64, String> {
            match get(name) {
                None => Ok(default),
                Some(s) => s
                    .parse::<u64>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("{name}={s:?}: expected a positive integer")),
            }
        };
        Ok(Config {
            backend,
            wire,
            mac,
            ip,
            peer_mac,
            poll: Duration::from_micros(number("ROCENIC_POLL_US", 10)?),
            event_timeout: Duration::from_millis(number("ROCENIC_EVENT_TIMEOUT_MS", 60_000)?),
        })
    }

    /// The configuration in the process's environment.
    pub fn from_env() -> Result<Config, String> {
        Config::from_lookup(|k| std::env::var(k).ok())
    }
}

fn parse_wire(s: &str) -> Result<Wire, String> {
    let usage = "expected udp:LOCAL_PORT:PEER_PORT (e.g. udp:9000:9001)";
    let parts: Vec<&str> = s.split(':').collect();
    let ["udp", local, peer] = parts.as_slice() else {
        return Err(usage.into());
    };
    let port = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{p:?} is not a port in 1..=65535; {usage}")),
    };
    let (local, peer) = (port(local)?, port(peer)?);
    if local == peer {
        return Err("LOCAL_PORT and PEER_PORT must differ".into());
    }
    Ok(Wire::Udp { local, peer })
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut mac {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(vars: &[(&str, &str)]) -> Result<Config, String> {
        Config::from_lookup(|k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn defaults_and_values() {
        let d = cfg(&[]).unwrap();
        assert_eq!(d.wire, Wire::None);
        assert_eq!(d.ip, [10, 0, 0, 1]);
        let c = cfg(&[
            ("ROCENIC_WIRE", "udp:9000:9001"),
            ("ROCENIC_MAC", "02:aa:00:00:00:07"),
            ("ROCENIC_IP", "10.1.2.3"),
            ("ROCENIC_POLL_US", "5"),
        ])
        .unwrap();
        assert_eq!(
            c.wire,
            Wire::Udp {
                local: 9000,
                peer: 9001
            }
        );
        assert_eq!(c.mac, [2, 0xaa, 0, 0, 0, 7]);
        assert_eq!(c.ip, [10, 1, 2, 3]);
        assert_eq!(c.poll, Duration::from_micros(5));
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (k, v) in [
            ("ROCENIC_WIRE", "udp:9000"),
            ("ROCENIC_WIRE", "udp:9000:9000"),
            ("ROCENIC_WIRE", "tcp:1:2"),
            ("ROCENIC_MAC", "02:00:00:00:00"),
            ("ROCENIC_PEER_MAC", "02:00:00:00:00:00:01"),
            ("ROCENIC_IP", "10.0.0"),
            ("ROCENIC_BACKEND", "rtl"),
            ("ROCENIC_POLL_US", "0"),
        ] {
            let e = cfg(&[(k, v)]).unwrap_err();
            assert!(e.starts_with(k), "{k}={v}: {e}");
        }
    }
}
