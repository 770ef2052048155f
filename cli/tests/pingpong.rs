//! `rocenic pingpong` against itself: a server and a client in one process, each its own
//! world with its NIC's port on a UDP wire to the other (ephemeral loopback ports), the
//! ibv_rc_pingpong TCP handshake on an ephemeral port.

use std::net::{TcpListener, TcpStream, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use rocenic_cli::pingpong::{run_with, PingpongArgs, PingpongReport, Prebound};
use rocenic_cli::wire::WireSpec;
use rocenic_driver::Counter;

const SERVER_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
const CLIENT_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
const SERVER_IP: [u8; 4] = [10, 0, 0, 1];
const CLIENT_IP: [u8; 4] = [10, 0, 0, 2];

struct Pair {
    server: PingpongReport,
    client: PingpongReport,
    server_out: String,
    client_out: String,
}

/// Sockets for a run, bound on ephemeral ports, and the argument sets that use them.
struct Setup {
    listener: TcpListener,
    server_udp: UdpSocket,
    client_udp: UdpSocket,
    server: PingpongArgs,
    client: PingpongArgs,
}

fn setup(size: u32, mtu: u32, iters: u32) -> Setup {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server_udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let client_udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (ps, pc) = (
        server_udp.local_addr().unwrap().port(),
        client_udp.local_addr().unwrap().port(),
    );
    let mut server = PingpongArgs::new(
        WireSpec::Udp {
            local: ps,
            peer: pc,
        },
        SERVER_MAC,
        SERVER_IP,
    );
    server.size = size;
    server.mtu = mtu;
    server.iters = iters;
    server.timeout = 20.0;
    let mut client = server.clone();
    client.server = Some("127.0.0.1".into());
    client.port = listener.local_addr().unwrap().port();
    client.link.wire = WireSpec::Udp {
        local: pc,
        peer: ps,
    };
    client.link.mac = CLIENT_MAC;
    client.link.ip = CLIENT_IP;
    Setup {
        listener,
        server_udp,
        client_udp,
        server,
        client,
    }
}

fn run(s: Setup) -> Pair {
    let Setup {
        listener,
        server_udp,
        client_udp,
        server,
        client,
    } = s;
    let srv = thread::spawn(move || {
        let mut out = Vec::new();
        let pre = Prebound {
            listener: Some(listener),
            udp: Some(server_udp),
        };
        let r = run_with(&server, pre, &mut out);
        (r, String::from_utf8(out).unwrap())
    });
    let cli = thread::spawn(move || {
        let mut out = Vec::new();
        let pre = Prebound {
            listener: None,
            udp: Some(client_udp),
        };
        let r = run_with(&client, pre, &mut out);
        (r, String::from_utf8(out).unwrap())
    });
    let (c, client_out) = cli.join().unwrap();
    let (s, server_out) = srv.join().unwrap();
    let client = c.unwrap_or_else(|e| panic!("client: {e:#}\n{client_out}\nserver:\n{server_out}"));
    let server = s.unwrap_or_else(|e| panic!("server: {e:#}\n{server_out}\nclient:\n{client_out}"));
    Pair {
        server,
        client,
        server_out,
        client_out,
    }
}

fn check(p: &Pair, size: u32, iters: u32) {
    for r in [&p.server, &p.client] {
        assert_eq!((r.sends, r.receives), (iters as u64, iters as u64));
        assert_eq!(r.size, size);
        assert_eq!(r.wire.tx_errors, 0);
        assert_eq!(r.wire.rx_queue_overflow, 0);
    }
    assert_eq!(p.client.verified_echoes, iters as u64);
    // The addresses each side saw are the ones the other announced.
    assert_eq!(p.client.remote, p.server.local);
    assert_eq!(p.server.remote, p.client.local);
    assert_eq!(p.client.peer_mac, SERVER_MAC);
    assert_eq!(p.server.peer_mac, CLIENT_MAC);
    let bytes = format!("{} bytes in ", u64::from(size) * u64::from(iters) * 2);
    for out in [&p.server_out, &p.client_out] {
        assert!(out.contains(&bytes), "{out}");
        assert!(out.contains(&format!("{iters} iters in ")), "{out}");
        assert!(out.contains(" usec/iter"), "{out}");
        assert!(out.contains("simulated: "), "{out}");
        assert!(
            out.contains("  local address:  LID 0x0000, QPN 0x"),
            "{out}"
        );
        assert!(
            out.contains("  remote address: LID 0x0000, QPN 0x"),
            "{out}"
        );
    }
    assert!(
        p.client_out.contains("GID ::ffff:10.0.0.1"),
        "{}",
        p.client_out
    );
    assert!(
        p.client_out.contains(&format!(
            "data: {iters} echoes of {size} bytes verified byte for byte"
        )),
        "{}",
        p.client_out
    );
}

fn round_trips(size: u32, mtu: u32, iters: u32) {
    let t = Instant::now();
    let mut st = setup(size, mtu, iters);
    // The original's -c: the server checks the first byte of every page at the end.
    st.server.chk = true;
    st.client.chk = true;
    let p = run(st);
    check(&p, size, iters);
    // Without --peer-mac both sides found each other by ARP.
    let (s, c) = (p.server.wire, p.client.wire);
    assert!(s.arp_requests_sent + c.arp_requests_sent >= 1, "{s} / {c}");
    assert!(s.arp_replies_sent + c.arp_replies_sent >= 1, "{s} / {c}");
    eprintln!(
        "size {size} mtu {mtu}: {iters} round trips in {:.2} s (client loop {:.3} s, {} cycles)",
        t.elapsed().as_secs_f64(),
        p.client.wall.as_secs_f64(),
        p.client.cycles
    );
}

#[test]
fn pingpong_1_byte_mtu_1024() {
    round_trips(1, 1024, 1000);
}

#[test]
fn pingpong_4096_bytes_mtu_1024() {
    round_trips(4096, 1024, 500);
}

#[test]
fn pingpong_65536_bytes_mtu_1024() {
    round_trips(65536, 1024, 100);
}

#[test]
fn pingpong_1_byte_mtu_4096() {
    round_trips(1, 4096, 1000);
}

#[test]
fn pingpong_4096_bytes_mtu_4096() {
    round_trips(4096, 4096, 500);
}

#[test]
fn pingpong_65536_bytes_mtu_4096() {
    round_trips(65536, 4096, 100);
}

#[test]
fn arp_resolves_the_peer_without_peer_mac_and_peer_mac_skips_it() {
    // ARP: the server resolves the client (whose wire answers and learns the server's MAC
    // from the request), so the client needs no request of its own.
    let p = run(setup(64, 1024, 10));
    check(&p, 64, 10);
    let (s, c) = (p.server.wire, p.client.wire);
    // (One request each way unless the machine stalls past the 250 ms retry interval.)
    assert!(s.arp_requests_sent >= 1, "{s}");
    assert_eq!(c.arp_requests_received, s.arp_requests_sent, "{c}");
    assert_eq!(c.arp_replies_sent, c.arp_requests_received, "{c}");
    assert!(s.arp_replies_received >= 1, "{s}");
    assert_eq!((s.arp_learned, c.arp_learned), (1, 1));
    assert_eq!(c.arp_requests_sent, 0, "{c}");

    // --peer-mac on both sides: no ARP at all.
    let mut st = setup(64, 1024, 10);
    st.server.link.peer_mac = Some(CLIENT_MAC);
    st.client.link.peer_mac = Some(SERVER_MAC);
    let p = run(st);
    check(&p, 64, 10);
    for w in [p.server.wire, p.client.wire] {
        assert_eq!(w.arp_requests_sent + w.arp_replies_sent, 0, "{w}");
    }
}

#[test]
fn garbage_datagrams_are_counted_and_ignored() {
    let st = setup(4096, 1024, 20);
    let server_port = st.server_udp.local_addr().unwrap();
    let client_port = st.client_udp.local_addr().unwrap();
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Before the run (queued in the sockets) and during it, from a third socket.
    let send_junk = move |junk: &UdpSocket| {
        for to in [server_port, client_port] {
            junk.send_to(b"xyz", to).unwrap();
            junk.send_to(&[0u8; 0], to).unwrap();
            junk.send_to(&vec![0xa5; 20_000], to).unwrap();
            // Well-sized Ethernet frames that are not for the NIC: another MAC, IPv6.
            let mut f = vec![0x33u8; 200];
            f[..6].copy_from_slice(&[0x02, 0x99, 0x99, 0x99, 0x99, 0x99]);
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            junk.send_to(&f, to).unwrap();
            f[..6].copy_from_slice(&SERVER_MAC);
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            junk.send_to(&f, to).unwrap();
        }
        // IPv4 garbage addressed to each NIC's MAC: it reaches the device, which must
        // drop it (a malformed frame) and carry on.
        for (to, mac) in [(server_port, SERVER_MAC), (client_port, CLIENT_MAC)] {
            let mut f: Vec<u8> = (0..300u32).map(|i| (i * 37 % 251) as u8).collect();
            f[..6].copy_from_slice(&mac);
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            junk.send_to(&f, to).unwrap();
        }
    };
    send_junk(&junk);
    let during = thread::spawn(move || {
        for _ in 0..5 {
            thread::sleep(Duration::from_millis(20));
            send_junk(&junk);
        }
    });
    let p = run(st);
    during.join().unwrap();
    check(&p, 4096, 20);
    for w in [p.server.wire, p.client.wire] {
        // 6 rounds of junk; the run may end before the last rounds arrive.
        assert!(w.rx_runt >= 2 && w.rx_runt % 2 == 0, "{w}");
        assert!(w.rx_oversized >= 1, "{w}");
        assert!(w.rx_not_for_us >= 2, "{w}");
        assert_eq!(w.garbage(), w.rx_runt + w.rx_oversized);
    }
    // The IPv4 garbage reached the NICs, which dropped it as malformed.
    for r in [&p.server, &p.client] {
        assert!(
            r.counters[Counter::MalformedDrops as usize] >= 1,
            "{:?}",
            r.counters
        );
    }
}

#[test]
fn the_server_refuses_a_malformed_handshake_with_a_clear_error() {
    let st = setup(64, 1024, 1);
    let port = st.client.port;
    let Setup {
        listener,
        server_udp,
        server,
        ..
    } = st;
    let srv = thread::spawn(move || {
        let pre = Prebound {
            listener: Some(listener),
            udp: Some(server_udp),
        };
        run_with(&server, pre, &mut Vec::new())
    });
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::{Read, Write};
    s.write_all(b"0000:000011:abcdef:not-a-gid-at-all-000000000000000\0")
        .unwrap();
    let mut buf = [0u8; 8];
    let _ = s.read(&mut buf);
    let e = srv.join().unwrap().unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("malformed ibv_rc_pingpong address message") && msg.contains("GID"),
        "{msg}"
    );
}
