//! The connection handshake of rdma-core's `ibv_rc_pingpong`, byte for byte, so either
//! side can be the original program.
//!
//! Each side's address is one message of [`MSG_LEN`] = 52 bytes: the text
//! `LLLL:QQQQQQ:PPPPPP:GGGG…` (`%04x:%06x:%06x:%s`: LID, QPN and PSN in lowercase hex,
//! then the 16 GID bytes in network order as 32 hex digits) and its terminating NUL.
//!
//! - The client connects to the server (`SERVER:PORT`, default port 18515), writes its
//!   message, reads the server's, writes `"done"` with its NUL (5 bytes) and closes.
//! - The server accepts one connection, reads the client's message, **connects its QP to
//!   the client before answering** (so the client's first SEND finds it ready), writes its
//!   message, and reads the 5 bytes of `"done"`.
//!
//! Every step is bounded by a timeout. A client retries a refused or reset connection (and
//! one closed before the server's answer) until its timeout: QEMU's user networking
//! accepts a forwarded connection before the guest listens and then drops it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// Length of one address message, its NUL included
/// (`sizeof "0000:000000:000000:00000000000000000000000000000000"`).
pub const MSG_LEN: usize = 52;
/// What the client sends last: `"done"` and its NUL.
pub const DONE: &[u8; 5] = b"done\0";
/// The default TCP port.
pub const DEFAULT_PORT: u16 = 18515;

/// Pause between two connection attempts of a client.
const RETRY_PAUSE: Duration = Duration::from_millis(200);
/// Pause between two looks for a client at the listening socket.
const ACCEPT_PAUSE: Duration = Duration::from_millis(20);
/// Pause between two tries of a socket read or write that would block.
const IO_PAUSE: Duration = Duration::from_millis(2);

/// One side's address (`struct pingpong_dest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dest {
    /// 0 on Ethernet (RoCE).
    pub lid: u16,
    pub qpn: u32,
    pub psn: u32,
    pub gid: [u8; 16],
}

/// A message that is not a pingpong address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed ibv_rc_pingpong address message {text:?}: {why}")]
pub struct MalformedMessage {
    /// The message as received (non-printable bytes escaped).
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl Dest {
    /// The message, NUL included.
    pub fn encode(&self) -> [u8; MSG_LEN] {
        let gid: String = self.gid.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "{:04x}:{:06x}:{:06x}:{gid}",
            self.lid,
            self.qpn & 0xff_ffff,
            self.psn & 0xff_ffff
        );
        let mut msg = [0u8; MSG_LEN];
        msg[..MSG_LEN - 1].copy_from_slice(text.as_bytes());
        msg
    }

    /// Parses a message: exactly 52 bytes, the last one NUL, four `:`-separated fields of
    /// 4, 6, 6 and 32 hex digits (either case).
    pub fn decode(msg: &[u8]) -> Result<Dest, MalformedMessage> {
        let bad = |why: String| MalformedMessage {
            text: String::from_utf8_lossy(msg).escape_debug().to_string(),
            why,
        };
        if msg.len() != MSG_LEN {
            return Err(bad(format!("{} bytes, expected {MSG_LEN}", msg.len())));
        }
        if let Some(at) = msg.iter().position(|&b| b == 0) {
            if at != MSG_LEN - 1 {
                return Err(bad(format!(
                    "NUL at byte {at}: the text must be {} characters",
                    MSG_LEN - 1
                )));
            }
        } else {
            return Err(bad(format!(
                "byte {} is not the terminating NUL",
                MSG_LEN - 1
            )));
        }
        let text = &msg[..MSG_LEN - 1];
        let fields: Vec<&[u8]> = text.split(|&b| b == b':').collect();
        if fields.len() != 4 {
            return Err(bad(format!(
                "{} ':'-separated fields, expected LID:QPN:PSN:GID",
                fields.len()
            )));
        }
        let hex = |f: &[u8], name: &str, digits: usize| -> Result<Vec<u8>, MalformedMessage> {
            if f.len() != digits || !f.iter().all(u8::is_ascii_hexdigit) {
                return Err(bad(format!(
                    "{name} {:?} is not {digits} hex digits",
                    String::from_utf8_lossy(f)
                )));
            }
            Ok(f.iter()
                .map(|&c| (c as char).to_digit(16).expect("checked") as u8)
                .collect())
        };
        let num = |d: Vec<u8>| d.iter().fold(0u32, |acc, &x| acc << 4 | u32::from(x));
        let lid = num(hex(fields[0], "LID", 4)?) as u16;
        let qpn = num(hex(fields[1], "QPN", 6)?);
        let psn = num(hex(fields[2], "PSN", 6)?);
        let nibbles = hex(fields[3], "GID", 32)?;
        let mut gid = [0u8; 16];
        for (g, pair) in gid.iter_mut().zip(nibbles.chunks(2)) {
            *g = pair[0] << 4 | pair[1];
        }
        Ok(Dest { lid, qpn, psn, gid })
    }
}

/// Whether a failed connection attempt is worth repeating.
fn retryable(kind: io::ErrorKind) -> bool {
    matches!(
        kind,
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::NotConnected
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::TimedOut
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::Interrupted
    )
}

fn time_left(deadline: Instant, what: &str, timeout: Duration) -> anyhow::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        bail!("{what}: timed out after {:.1} s", timeout.as_secs_f64());
    }
    Ok(left)
}

/// Reads exactly `buf.len()` bytes from a non-blocking stream before `deadline`, calling
/// `idle` whenever nothing is there (the NIC keeps running: the peer may be waiting for
/// our ARP reply before it answers); on failure says how many bytes arrived.
pub(crate) fn read_all(
    s: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
    idle: &mut dyn FnMut(Duration),
) -> Result<(), (usize, io::Error)> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => {
                return Err((
                    got,
                    io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"),
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err((got, io::Error::new(io::ErrorKind::TimedOut, "timed out")));
                }
                idle(IO_PAUSE);
            }
            Err(e) => return Err((got, e)),
        }
    }
    Ok(())
}

/// Writes all of `data` to a non-blocking stream before `deadline`, calling `idle` while
/// the socket is full.
pub(crate) fn write_all(
    s: &mut TcpStream,
    mut data: &[u8],
    deadline: Instant,
    idle: &mut dyn FnMut(Duration),
) -> io::Result<()> {
    while !data.is_empty() {
        match s.write(data) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "connection closed",
                ))
            }
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
                }
                idle(IO_PAUSE);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The client side: connects to `server:port` (retrying refused, reset or dropped
/// connections until `timeout`), sends `me`, reads the server's address and sends "done".
/// `idle` is called with a short duration whenever the client waits between attempts (to
/// let the NIC's world run).
pub fn client_exchange(
    server: &str,
    port: u16,
    me: &Dest,
    timeout: Duration,
    idle: &mut dyn FnMut(Duration),
) -> anyhow::Result<Dest> {
    connect_retrying(
        server,
        port,
        timeout,
        idle,
        &mut |s, addr, left, deadline, idle| client_attempt(s, addr, me, left, deadline, idle),
    )
    .map(|(_, dest)| dest)
}

/// One try of a client's opening exchange on a fresh connection.
pub(crate) type OpeningExchange<'a, T> = dyn FnMut(
        &mut TcpStream,
        SocketAddr,
        Duration,
        Instant,
        &mut dyn FnMut(Duration),
    ) -> Result<T, Attempt>
    + 'a;

/// Connects to `server:port` and runs `opening` on the connection (non-blocking, no
/// delay), repeating both on a refused, reset or dropped connection until `timeout`;
/// returns the connection and what `opening` returned. `idle` is called between tries.
pub(crate) fn connect_retrying<T>(
    server: &str,
    port: u16,
    timeout: Duration,
    idle: &mut dyn FnMut(Duration),
    opening: &mut OpeningExchange<'_, T>,
) -> anyhow::Result<(TcpStream, T)> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<SocketAddr> = (server, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve server {server:?}"))?
        .collect();
    let Some(&addr) = addrs.first() else {
        bail!("server {server:?} has no address");
    };
    let what = format!("connecting to {addr}");
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let left = time_left(deadline, &what, timeout)?;
        let attempt = TcpStream::connect_timeout(&addr, left.min(Duration::from_secs(5)))
            .map_err(|e| retry_or_fatal(e, "connecting to", addr))
            .and_then(|mut s| {
                s.set_nonblocking(true)
                    .and_then(|()| s.set_nodelay(true))
                    .map_err(|e| Attempt::Fatal(e.into()))?;
                let t = opening(&mut s, addr, left, Instant::now() + left, idle)?;
                Ok((s, t))
            });
        let last_error = match attempt {
            Ok(done) => return Ok(done),
            Err(Attempt::Retry(e)) => e,
            Err(Attempt::Fatal(e)) => return Err(e),
        };
        if Instant::now() + RETRY_PAUSE >= deadline {
            bail!(
                "could not exchange addresses with {addr} within {:.1} s ({attempts} attempts; \
                 last: {last_error}): is the server running?",
                timeout.as_secs_f64()
            );
        }
        idle(RETRY_PAUSE);
    }
}

fn retry_or_fatal(e: io::Error, what: &str, addr: SocketAddr) -> Attempt {
    if retryable(e.kind()) {
        Attempt::Retry(e)
    } else {
        Attempt::Fatal(anyhow::Error::new(e).context(format!("{what} {addr}")))
    }
}

/// Reads the server's first answer of a client's opening exchange: a connection closed
/// or reset before a single byte of it means the server was not there yet (QEMU accepted
/// for a guest that does not listen yet), so the attempt is repeated.
pub(crate) fn read_opening_answer(
    s: &mut TcpStream,
    buf: &mut [u8],
    addr: SocketAddr,
    left: Duration,
    deadline: Instant,
    idle: &mut dyn FnMut(Duration),
) -> Result<(), Attempt> {
    match read_all(s, buf, deadline, idle) {
        Ok(()) => Ok(()),
        Err((0, e))
            if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
            ) =>
        {
            Err(Attempt::Retry(e))
        }
        Err((got, e))
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Err(Attempt::Fatal(anyhow::anyhow!(
                "{addr} accepted the connection but sent {got} of the {} bytes of its first \
                 message within {:.1} s",
                buf.len(),
                left.as_secs_f64()
            )))
        }
        Err((got, e)) => Err(Attempt::Fatal(anyhow::anyhow!(
            "reading the server's first message from {addr}: {e} after {got} of {} bytes",
            buf.len()
        ))),
    }
}

pub(crate) enum Attempt {
    /// Nothing of the server's answer arrived: try again.
    Retry(io::Error),
    Fatal(anyhow::Error),
}

fn client_attempt(
    s: &mut TcpStream,
    addr: SocketAddr,
    me: &Dest,
    left: Duration,
    deadline: Instant,
    idle: &mut dyn FnMut(Duration),
) -> Result<Dest, Attempt> {
    let fatal = |e: anyhow::Error| Attempt::Fatal(e);
    write_all(s, &me.encode(), deadline, idle)
        .map_err(|e| retry_or_fatal(e, "sending our address to", addr))?;
    let mut msg = [0u8; MSG_LEN];
    read_opening_answer(s, &mut msg, addr, left, deadline, idle)?;
    let dest = Dest::decode(&msg).map_err(|e| fatal(e.into()))?;
    write_all(s, DONE, deadline, idle)
        .map_err(|e| fatal(anyhow::Error::new(e).context(format!("sending \"done\" to {addr}"))))?;
    Ok(dest)
}

/// The server side, first half: waits (at most `timeout`) for one client on `listener`,
/// calling `idle` between looks, and reads its address. Then connect the QP and call
/// [`server_finish`].
pub fn server_accept(
    listener: &TcpListener,
    timeout: Duration,
    idle: &mut dyn FnMut(Duration),
) -> anyhow::Result<(TcpStream, Dest)> {
    let deadline = Instant::now() + timeout;
    let (mut s, peer) = accept_one(listener, timeout, idle)?;
    let mut msg = [0u8; MSG_LEN];
    read_all(&mut s, &mut msg, deadline, idle).map_err(|(got, e)| {
        anyhow::anyhow!(
            "reading the client's address from {peer}: {e} after {got} of {MSG_LEN} bytes"
        )
    })?;
    let dest = Dest::decode(&msg)?;
    Ok((s, dest))
}

/// Waits (at most `timeout`) for one client on `listener`, calling `idle` between looks;
/// the connection is non-blocking, without delay.
pub(crate) fn accept_one(
    listener: &TcpListener,
    timeout: Duration,
    idle: &mut dyn FnMut(Duration),
) -> anyhow::Result<(TcpStream, SocketAddr)> {
    let deadline = Instant::now() + timeout;
    let local = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let (s, peer) = loop {
        match listener.accept() {
            Ok(c) => break c,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                if Instant::now() >= deadline {
                    bail!(
                        "no client connected to {local} within {:.1} s",
                        timeout.as_secs_f64()
                    );
                }
                idle(ACCEPT_PAUSE);
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("accept on {local}"))),
        }
    };
    listener.set_nonblocking(false)?;
    s.set_nonblocking(true)?;
    s.set_nodelay(true)?;
    Ok((s, peer))
}

/// The server side, second half: sends our address and reads the client's "done", within
/// `timeout`, calling `idle` while it waits.
pub fn server_finish(
    mut s: TcpStream,
    me: &Dest,
    timeout: Duration,
    idle: &mut dyn FnMut(Duration),
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    let peer = s.peer_addr()?;
    s.set_nonblocking(true)?;
    write_all(&mut s, &me.encode(), deadline, idle)
        .with_context(|| format!("sending our address to {peer}"))?;
    let mut done = [0u8; DONE.len()];
    read_all(&mut s, &mut done, deadline, idle).map_err(|(got, e)| {
        anyhow::anyhow!(
            "reading \"done\" from {peer}: {e} after {got} of {} bytes",
            DONE.len()
        )
    })?;
    if &done != DONE {
        bail!(
            "the client ended the handshake with {:?} instead of \"done\"",
            String::from_utf8_lossy(&done)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest() -> Dest {
        let mut gid = [0u8; 16];
        gid[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 2, 15]);
        Dest {
            lid: 0,
            qpn: 0x11,
            psn: 0xab_cdef,
            gid,
        }
    }

    #[test]
    fn messages_are_the_originals_bytes() {
        let msg = dest().encode();
        assert_eq!(
            &msg[..],
            &b"0000:000011:abcdef:00000000000000000000ffff0a00020f\0"[..]
        );
        assert_eq!(Dest::decode(&msg), Ok(dest()));
        // Upper-case hex, as another implementation might send, is accepted.
        let upper = b"0000:00001A:ABCDEF:00000000000000000000FFFF0A00020F\0";
        let d = Dest::decode(upper).unwrap();
        assert_eq!((d.qpn, d.psn, d.gid), (0x1a, 0xab_cdef, dest().gid));
        // Fields wider than the format are cut to 24 bits, as the C format does not.
        let wide = Dest {
            qpn: 0x1ff_ffff,
            ..dest()
        };
        assert_eq!(Dest::decode(&wide.encode()).unwrap().qpn, 0xff_ffff);
    }

    #[test]
    fn malformed_messages_are_refused_with_the_reason() {
        let good = dest().encode();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..51].to_vec(), "51 bytes, expected 52"),
            ([&good[..], b"x"].concat(), "53 bytes, expected 52"),
            (
                {
                    let mut m = good;
                    m[51] = b'x';
                    m.to_vec()
                },
                "byte 51 is not the terminating NUL",
            ),
            (
                {
                    let mut m = good;
                    m[20] = 0;
                    m.to_vec()
                },
                "NUL at byte 20",
            ),
            (
                b"0000-000011-abcdef-00000000000000000000ffff0a00020f\0".to_vec(),
                "1 ':'-separated fields",
            ),
            (
                b"0000:000011:abcdef:00000000000000000000ffff0a0002:f\0".to_vec(),
                "5 ':'-separated fields",
            ),
            (
                b"00z0:000011:abcdef:00000000000000000000ffff0a00020f\0".to_vec(),
                "LID \"00z0\" is not 4 hex digits",
            ),
            (
                b"0000:00011:abcdef0:00000000000000000000ffff0a00020f\0".to_vec(),
                "QPN \"00011\" is not 6 hex digits",
            ),
            (
                b"0000:000011:abcdeg:00000000000000000000ffff0a00020f\0".to_vec(),
                "PSN \"abcdeg\" is not 6 hex digits",
            ),
            (
                b"0000:000011:abcdef:00000000000000000000ffff0a00020 \0".to_vec(),
                "GID",
            ),
            (vec![0xff; MSG_LEN], "byte 51 is not the terminating NUL"),
        ];
        for (msg, why) in cases {
            let e = Dest::decode(&msg).unwrap_err();
            assert!(e.why.contains(why), "{e} (wanted {why:?})");
            assert!(
                e.to_string()
                    .starts_with("malformed ibv_rc_pingpong address message"),
                "{e}"
            );
        }
    }

    #[test]
    fn client_and_server_exchange_over_tcp() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server_me = Dest {
            qpn: 0x22,
            ..dest()
        };
        let server = std::thread::spawn(move || {
            let (s, client) = server_accept(&listener, Duration::from_secs(10), &mut |d| {
                std::thread::sleep(d)
            })
            .unwrap();
            server_finish(s, &server_me, Duration::from_secs(10), &mut |d| {
                std::thread::sleep(d)
            })
            .unwrap();
            client
        });
        let got = client_exchange(
            "127.0.0.1",
            port,
            &dest(),
            Duration::from_secs(10),
            &mut |d| std::thread::sleep(d),
        )
        .unwrap();
        assert_eq!(got.qpn, 0x22);
        assert_eq!(server.join().unwrap(), dest());
    }

    #[test]
    fn the_client_retries_until_a_server_answers() {
        // Learn a free port, then leave it closed for a while (refused), then accept one
        // connection and drop it unanswered (as QEMU does for a guest not yet listening),
        // then answer properly.
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let server = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
            let (dropped, _) = listener.accept().unwrap();
            drop(dropped);
            let (s, client) = server_accept(&listener, Duration::from_secs(10), &mut |d| {
                std::thread::sleep(d)
            })
            .unwrap();
            server_finish(s, &dest(), Duration::from_secs(10), &mut |d| {
                std::thread::sleep(d)
            })
            .unwrap();
            client
        });
        let mut idles = 0;
        let got = client_exchange(
            "127.0.0.1",
            port,
            &dest(),
            Duration::from_secs(20),
            &mut |d| {
                idles += 1;
                std::thread::sleep(d)
            },
        )
        .unwrap();
        assert_eq!(got, dest());
        assert_eq!(server.join().unwrap(), dest());
        assert!(idles >= 2, "retried {idles} times");
    }

    #[test]
    fn waits_end_with_clear_errors() {
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let e = client_exchange(
            "127.0.0.1",
            port,
            &dest(),
            Duration::from_millis(600),
            &mut |d| std::thread::sleep(d),
        )
        .unwrap_err();
        assert!(e.to_string().contains("is the server running?"), "{e:#}");

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = server_accept(&listener, Duration::from_millis(100), &mut |d| {
            std::thread::sleep(d)
        })
        .unwrap_err();
        assert!(e.to_string().contains("no client connected"), "{e:#}");

        // A client that sends garbage: the server refuses it with the reason.
        let port = listener.local_addr().unwrap().port();
        let client = std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(&[b'?'; MSG_LEN]).unwrap();
            let mut b = [0u8; 1];
            let _ = s.read(&mut b);
        });
        let e = server_accept(&listener, Duration::from_secs(5), &mut |d| {
            std::thread::sleep(d)
        })
        .unwrap_err();
        assert!(e.downcast_ref::<MalformedMessage>().is_some(), "{e:#}");
        drop(listener);
        client.join().unwrap();
    }
}
