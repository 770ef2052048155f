//! perftest's TCP connection protocol ("Data ex. method : Ethernet"), as perftest 4.5
//! (Debian 12's `perftest 4.5+0.17`, protocol version string `6.06`) speaks it, so either
//! side of a bandwidth test can be the original program.
//!
//! Every step is an exchange of equal-sized messages: the client writes its message and
//! then reads the server's; the server reads first and then writes. In order:
//!
//! 1. versions: 16 bytes, the NUL-padded version string (`"6.06"`);
//! 2. system data: the cycle buffer (the page size, 4096) and then the cache line size
//!    (64), each a 4-byte big-endian integer; both sides use the larger values;
//! 3. MTU: 2 bytes, the `enum ibv_mtu` value as decimal text with its NUL (`"3"` = 1024);
//!    both use the smaller;
//! 4. keys ([`Keys`], [`KEYS_LEN`] = 108 bytes), once per QP: then both connect their QPs;
//! 5. synchronisations: the same keys message again, [`pre_run_syncs`] times before the
//!    traffic (the last one after the SEND server has posted its receives);
//! 6. after the traffic: WRITE, READ and atomic tests sync once more (the server waits
//!    there for the client to finish) and exchange bandwidth reports ([`Report`]);
//! 7. closing: one more sync, then each side writes `"done"` and its NUL and closes.
//!
//! Measured against the guest's tools (see docs/interop.md); perftest reads each message
//! with one `read()` of its full size, so each message is written with one `write()`.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use crate::pingpong::handshake::{read_all, write_all};

/// The protocol version we announce: perftest 4.5-0.17's `VERSION`.
pub const VERSION: &str = "6.06";
/// Length of the version message.
pub const VERSION_LEN: usize = 16;
/// Length of a keys message with a GID (`KEY_MSG_SIZE_GID`), its NUL included.
pub const KEYS_LEN: usize = 108;
/// What each side writes last.
pub const DONE: &[u8; 5] = b"done\0";
/// The cycle buffer we announce (perftest: the page size).
pub const CYCLE_BUFFER: u32 = 4096;
/// The cache line size we announce.
pub const CACHE_LINE: u32 = 64;

/// The test, as the handshake's step counts depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestKind {
    Write,
    Read,
    Send,
    Atomic,
}

/// Keys-message synchronisations after the keys exchange and before the traffic.
pub fn pre_run_syncs(kind: TestKind) -> usize {
    match kind {
        TestKind::Send => 3,
        TestKind::Write | TestKind::Read | TestKind::Atomic => 2,
    }
}

/// Whether the test ends with the post-traffic sync and the report exchange.
pub fn exchanges_reports(kind: TestKind) -> bool {
    kind != TestKind::Send
}

/// One side's QP as perftest sends it (`struct pingpong_dest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    pub lid: u16,
    /// Outstanding RDMA READ/atomic requests it accepts as target (1 for WRITE/SEND).
    pub out_reads: u32,
    pub qpn: u32,
    pub psn: u32,
    pub rkey: u32,
    pub vaddr: u64,
    pub gid: [u8; 16],
    pub srqn: u32,
}

/// A message that is not a perftest keys message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed perftest keys message {text:?}: {why}")]
pub struct MalformedKeys {
    pub text: String,
    pub why: String,
}

impl Keys {
    /// `%04x:%04x:%06x:%06x:%08x:%016x:` then the 16 GID bytes as `%02x:` each, then
    /// `%08x:` (the SRQ number) and the NUL: 108 bytes.
    pub fn encode(&self) -> [u8; KEYS_LEN] {
        let mut text = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid,
            self.out_reads & 0xffff,
            self.qpn & 0xff_ffff,
            self.psn & 0xff_ffff,
            self.rkey,
            self.vaddr
        );
        for b in self.gid {
            text.push_str(&format!("{b:02x}:"));
        }
        text.push_str(&format!("{:08x}:", self.srqn));
        let mut msg = [0u8; KEYS_LEN];
        msg[..KEYS_LEN - 1].copy_from_slice(text.as_bytes());
        msg
    }

    /// Parses a keys message: 23 `:`-terminated hex fields (LID, out_reads, QPN, PSN,
    /// rkey, vaddr, 16 GID bytes, SRQN) before a NUL.
    pub fn decode(msg: &[u8]) -> Result<Keys, MalformedKeys> {
        let bad = |why: String| MalformedKeys {
            text: String::from_utf8_lossy(msg).escape_debug().to_string(),
            why,
        };
        if msg.len() != KEYS_LEN {
            return Err(bad(format!("{} bytes, expected {KEYS_LEN}", msg.len())));
        }
        let end = msg
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| bad("no terminating NUL".into()))?;
        let text = std::str::from_utf8(&msg[..end]).map_err(|_| bad("not ASCII text".into()))?;
        let Some(body) = text.strip_suffix(':') else {
            return Err(bad("the text does not end with ':'".into()));
        };
        let fields: Vec<&str> = body.split(':').collect();
        if fields.len() != 23 {
            return Err(bad(format!(
                "{} fields, expected 23 (LID, out_reads, QPN, PSN, rkey, vaddr, 16 GID \
                 bytes, SRQN)",
                fields.len()
            )));
        }
        let num = |i: usize, name: &str, max_digits: usize| -> Result<u64, MalformedKeys> {
            let f = fields[i];
            if f.is_empty() || f.len() > max_digits {
                return Err(bad(format!(
                    "{name} {f:?} is not 1..={max_digits} hex digits"
                )));
            }
            u64::from_str_radix(f, 16).map_err(|_| bad(format!("{name} {f:?} is not hex")))
        };
        let mut gid = [0u8; 16];
        for (k, g) in gid.iter_mut().enumerate() {
            *g = num(6 + k, "GID byte", 2)? as u8;
        }
        Ok(Keys {
            lid: num(0, "LID", 4)? as u16,
            out_reads: num(1, "out_reads", 4)? as u32,
            qpn: num(2, "QPN", 6)? as u32,
            psn: num(3, "PSN", 6)? as u32,
            rkey: num(4, "rkey", 8)? as u32,
            vaddr: num(5, "vaddr", 16)?,
            gid,
            srqn: num(22, "SRQN", 8)? as u32,
        })
    }
}

/// A bandwidth report (`struct bw_report_data`'s exchanged fields).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Report {
    pub size: u64,
    pub iters: u64,
    /// MB/s (MB = 2^20 bytes).
    pub bw_peak: f64,
    pub bw_avg: f64,
    /// Millions of messages per second.
    pub msg_rate: f64,
}

/// The TCP connection of one test, after the version exchange.
pub struct Channel {
    stream: TcpStream,
    peer: SocketAddr,
    client: bool,
    timeout: Duration,
    /// The peer's version string.
    pub peer_version: String,
}

/// The version message: `VERSION`, NUL-padded.
pub fn version_message() -> [u8; VERSION_LEN] {
    let mut m = [0u8; VERSION_LEN];
    m[..VERSION.len()].copy_from_slice(VERSION.as_bytes());
    m
}

/// The version string in a version message (up to its first NUL).
pub fn parse_version(msg: &[u8]) -> String {
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    String::from_utf8_lossy(&msg[..end]).into_owned()
}

impl Channel {
    /// Wraps a connection whose version exchange is done.
    pub fn new(
        stream: TcpStream,
        client: bool,
        timeout: Duration,
        peer_version: String,
    ) -> anyhow::Result<Channel> {
        let peer = stream.peer_addr()?;
        Ok(Channel {
            stream,
            peer,
            client,
            timeout,
            peer_version,
        })
    }

    /// The server's version exchange on an accepted connection.
    pub fn accept_versions(
        mut stream: TcpStream,
        timeout: Duration,
        idle: &mut dyn FnMut(Duration),
    ) -> anyhow::Result<Channel> {
        let mut theirs = [0u8; VERSION_LEN];
        let deadline = Instant::now() + timeout;
        read_all(&mut stream, &mut theirs, deadline, idle).map_err(|(got, e)| {
            anyhow::anyhow!("reading the client's version: {e} after {got} bytes")
        })?;
        write_all(&mut stream, &version_message(), deadline, idle)
            .context("sending our version")?;
        Channel::new(stream, false, timeout, parse_version(&theirs))
    }

    /// One exchange: the client writes `mine` and reads `theirs`, the server the other
    /// way round; `what` names it in errors.
    pub fn xchg(
        &mut self,
        mine: &[u8],
        theirs: &mut [u8],
        what: &str,
        idle: &mut dyn FnMut(Duration),
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + self.timeout;
        let peer = self.peer;
        let read = |s: &mut TcpStream, buf: &mut [u8], idle: &mut dyn FnMut(Duration)| {
            read_all(s, buf, deadline, idle).map_err(|(got, e)| {
                anyhow::anyhow!(
                    "{what}: reading {} bytes from {peer}: {e} after {got} bytes",
                    buf.len()
                )
            })
        };
        let write = |s: &mut TcpStream, data: &[u8], idle: &mut dyn FnMut(Duration)| {
            write_all(s, data, deadline, idle)
                .with_context(|| format!("{what}: writing {} bytes to {peer}", data.len()))
        };
        if self.client {
            write(&mut self.stream, mine, idle)?;
            read(&mut self.stream, theirs, idle)
        } else {
            read(&mut self.stream, theirs, idle)?;
            write(&mut self.stream, mine, idle)
        }
    }

    /// Exchanges cycle buffer and cache line sizes; returns the peer's.
    pub fn sys_data(&mut self, idle: &mut dyn FnMut(Duration)) -> anyhow::Result<(u32, u32)> {
        let mut cb = [0u8; 4];
        self.xchg(&CYCLE_BUFFER.to_be_bytes(), &mut cb, "page size", idle)?;
        let mut cl = [0u8; 4];
        self.xchg(&CACHE_LINE.to_be_bytes(), &mut cl, "cache line size", idle)?;
        Ok((u32::from_be_bytes(cb), u32::from_be_bytes(cl)))
    }

    /// Exchanges the MTUs (`enum ibv_mtu` values, 1 = 256 ..= 5 = 4096); returns the
    /// peer's, `None` when it is not a valid one (perftest then keeps its own).
    pub fn mtu(&mut self, mine: u8, idle: &mut dyn FnMut(Duration)) -> anyhow::Result<Option<u8>> {
        let mut msg = [0u8; 2];
        msg[0] = b'0' + mine;
        let mut theirs = [0u8; 2];
        self.xchg(&msg, &mut theirs, "MTU", idle)?;
        let end = theirs.iter().position(|&b| b == 0).unwrap_or(2);
        Ok(std::str::from_utf8(&theirs[..end])
            .ok()
            .and_then(|t| t.parse::<u8>().ok())
            .filter(|m| (1..=5).contains(m)))
    }

    /// Exchanges keys messages (the QP's address, and every later synchronisation).
    pub fn keys(
        &mut self,
        mine: &Keys,
        what: &str,
        idle: &mut dyn FnMut(Duration),
    ) -> anyhow::Result<Keys> {
        let mut theirs = [0u8; KEYS_LEN];
        self.xchg(&mine.encode(), &mut theirs, what, idle)?;
        Ok(Keys::decode(&theirs)?)
    }

    /// Exchanges bandwidth reports, field by field, big-endian (iterations as 8 bytes,
    /// as perftest does with peers of version 5.33 and later).
    pub fn reports(
        &mut self,
        mine: &Report,
        idle: &mut dyn FnMut(Duration),
    ) -> anyhow::Result<Report> {
        let mut f = [0u8; 8];
        self.xchg(&mine.size.to_be_bytes(), &mut f, "report (size)", idle)?;
        let size = u64::from_be_bytes(f);
        self.xchg(
            &mine.iters.to_be_bytes(),
            &mut f,
            "report (iterations)",
            idle,
        )?;
        let iters = u64::from_be_bytes(f);
        let mut dbl = |v: f64, what: &str, idle: &mut dyn FnMut(Duration)| {
            let mut f = [0u8; 8];
            self.xchg(&v.to_bits().to_be_bytes(), &mut f, what, idle)?;
            anyhow::Ok(f64::from_bits(u64::from_be_bytes(f)))
        };
        let bw_peak = dbl(mine.bw_peak, "report (peak bandwidth)", idle)?;
        let bw_avg = dbl(mine.bw_avg, "report (average bandwidth)", idle)?;
        let msg_rate = dbl(mine.msg_rate, "report (message rate)", idle)?;
        Ok(Report {
            size,
            iters,
            bw_peak,
            bw_avg,
            msg_rate,
        })
    }

    /// Writes "done" and reads the peer's (which it may skip by closing first).
    pub fn done(mut self, idle: &mut dyn FnMut(Duration)) -> anyhow::Result<()> {
        let deadline = Instant::now() + self.timeout;
        match write_all(&mut self.stream, DONE, deadline, idle) {
            Ok(()) => {}
            // The peer may close as soon as it has written its own "done".
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                ) =>
            {
                return Ok(())
            }
            Err(e) => return Err(anyhow::Error::new(e).context("writing \"done\"")),
        }
        let mut theirs = [0u8; DONE.len()];
        match read_all(&mut self.stream, &mut theirs, deadline, idle) {
            Ok(()) if &theirs == DONE => Ok(()),
            Ok(()) => bail!(
                "the peer ended with {:?} instead of \"done\"",
                String::from_utf8_lossy(&theirs)
            ),
            Err((_, e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
                ) =>
            {
                Ok(())
            }
            Err((got, e)) => bail!("reading \"done\": {e} after {got} bytes"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Keys {
        let mut gid = [0u8; 16];
        gid[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 2]);
        Keys {
            lid: 0,
            out_reads: 0x80,
            qpn: 0x13,
            psn: 0xb7_3f44,
            rkey: 0x53e,
            vaddr: 0x55c8_359a_7000,
            gid,
            srqn: 0,
        }
    }

    #[test]
    fn keys_messages_are_the_originals_bytes() {
        // As ib_read_bw 4.5-0.17 sent it (recorded between two guests' tools).
        let want = b"0000:0080:000013:b73f44:0000053e:000055c8359a7000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:02:00000000:\0";
        assert_eq!(want.len(), KEYS_LEN);
        assert_eq!(&keys().encode()[..], &want[..]);
        assert_eq!(Keys::decode(want), Ok(keys()));
        // Upper-case hex is read too.
        let upper = String::from_utf8_lossy(want).to_uppercase();
        assert_eq!(Keys::decode(upper.as_bytes()), Ok(keys()));
    }

    #[test]
    fn malformed_keys_are_refused_with_the_reason() {
        let good = keys().encode();
        let mut short = good.to_vec();
        short.pop();
        let mut no_nul = good;
        no_nul[KEYS_LEN - 1] = b'0';
        let mut bad_hex = good;
        bad_hex[2] = b'g';
        let mut fewer = [0u8; KEYS_LEN];
        fewer[..6].copy_from_slice(b"0000:0");
        for (msg, want) in [
            (&short[..], "107 bytes"),
            (&no_nul[..], "no terminating NUL"),
            (&bad_hex[..], "LID \"00g0\" is not hex"),
            (&fewer[..], "does not end with ':'"),
        ] {
            let e = Keys::decode(msg).unwrap_err().to_string();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
    }

    #[test]
    fn versions_and_step_counts() {
        let v = version_message();
        assert_eq!(&v[..5], b"6.06\0");
        assert_eq!(parse_version(&v), "6.06");
        assert_eq!(pre_run_syncs(TestKind::Send), 3);
        assert_eq!(pre_run_syncs(TestKind::Write), 2);
        assert!(!exchanges_reports(TestKind::Send));
        assert!(exchanges_reports(TestKind::Atomic));
    }
}
