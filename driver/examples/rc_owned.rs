//! An RC server and client on two model NICs cabled together, in one process (a simulated
//! world runs both NICs, stepped by whichever side waits). The client WRITEs into the
//! server's memory, READs back from it and SENDs a message; all memory is the
//! application's own `Vec<u8>`s registered in place (`Context::reg_mr_owned`), and every
//! completion and byte is checked once the vectors come back from `dereg_mr_owned`.
//!
//! ```text
//! cargo run --release -p rocenic-driver --features model --example rc_owned
//! ```
//!
//! Prints a short summary and exits non-zero on any failure. `cargo test` runs it too.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use rocenic_driver::backend::model::{two_node_world, PairConfig};
use rocenic_driver::verbs::{
    access, qp_attr, send_flags, AhAttr, Context, Cq, Mtu, Pd, Qp, QpAttr, QpCap, QpInitAttr,
    QpState, RecvWr, SendWr, Wc, WcOpcode, WcStatus, WrOpcode,
};
use rocenic_driver::{Error, RdmaWr};

/// How long one side waits for its completions.
const WAIT: Duration = Duration::from_secs(10);
/// Message size of each operation.
const LEN: usize = 16 << 10;
/// Layout of the server's memory: WRITE target, READ source, SEND target.
const WRITE_AT: usize = 0;
const READ_AT: usize = LEN;
const SEND_AT: usize = 2 * LEN;
/// Layout of the client's memory: message source, READ destination.
const SRC_AT: usize = 0;
const DST_AT: usize = LEN;

/// The access a connection's memory and QPs grant.
const ACCESS: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ;

/// What one side has: its context, protection domain, CQ and QP, and its port address.
struct Side {
    ctx: Context,
    pd: Pd,
    cq: Cq,
    qp: Qp,
    mac: [u8; 6],
    ip: [u8; 4],
}

fn side(be: Box<dyn rocenic_driver::Backend>, n: u8) -> Result<Side, Error> {
    let mut ctx = Context::open(be)?;
    let (mac, ip) = ([2, 0, 0, 0, 0, n], [10, 0, 0, n]);
    ctx.set_port(mac, ip);
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(8)?;
    let cap = QpCap {
        max_send_wr: 8,
        max_recv_wr: 8,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let qp = ctx.create_qp(
        pd,
        &QpInitAttr {
            send_cq: cq,
            recv_cq: cq,
            cap,
        },
    )?;
    Ok(Side {
        ctx,
        pd,
        cq,
        qp,
        mac,
        ip,
    })
}

/// Moves `s`'s QP through INIT, RTR and RTS towards `peer` (what the two sides would
/// exchange out of band: QPN, PSN, MAC, IP).
fn connect(s: &mut Side, peer: (u32, [u8; 6], [u8; 4]), psns: (u32, u32)) -> Result<(), Error> {
    let init = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: ACCESS,
        ..QpAttr::default()
    };
    s.ctx
        .modify_qp(s.qp, &init, qp_attr::STATE | qp_attr::ACCESS_FLAGS)?;
    let rtr = QpAttr {
        qp_state: QpState::Rtr,
        path_mtu: Mtu::Mtu4096,
        dest_qp_num: peer.0,
        rq_psn: psns.1,
        ah_attr: AhAttr {
            dmac: peer.1,
            dip: peer.2,
            udp_sport: 0xc000,
        },
        max_dest_rd_atomic: 4,
        min_rnr_timer: 1,
        ..init
    };
    s.ctx.modify_qp(s.qp, &rtr, qp_attr::REQ_RTR)?;
    let rts = QpAttr {
        qp_state: QpState::Rts,
        sq_psn: psns.0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 4,
        ..rtr
    };
    s.ctx.modify_qp(s.qp, &rts, qp_attr::REQ_RTS)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed))
        .collect()
}

/// Checks that `wc` is the successful completion `(wr_id, opcode, byte_len)`.
fn check_wc(wc: &Wc, want: (u64, WcOpcode, usize)) -> Result<(), String> {
    let got = (wc.wr_id, wc.status, wc.opcode, wc.byte_len as usize);
    if got != (want.0, WcStatus::Success, want.1, want.2) {
        return Err(format!("completion {wc} is not the expected {want:?}"));
    }
    Ok(())
}

/// Checks `len` bytes of `mem` at `at` against `want`.
fn check_bytes(what: &str, mem: &[u8], at: usize, want: &[u8]) -> Result<(), String> {
    let Some(got) = mem.get(at..at + want.len()) else {
        return Err(format!(
            "{what}: {} bytes at {at} run past the {} given back",
            want.len(),
            mem.len()
        ));
    };
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: byte {i} is {:#04x}, expected {:#04x}",
            mem[at + i],
            want[i]
        )),
    }
}

/// Runs the whole exchange; returns the summary lines.
fn run() -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let pair = two_node_world(&PairConfig::default(), None)?;
    let mut server = side(Box::new(pair.a), 1)?;
    let mut client = side(Box::new(pair.b), 2)?;
    let s_info = (server.qp.qp_num, server.mac, server.ip);
    let c_info = (client.qp.qp_num, client.mac, client.ip);
    connect(&mut server, c_info, (1000, 2000))?;
    connect(&mut client, s_info, (2000, 1000))?;

    // The server's memory: a READ source; the rest is written by the client.
    let mut server_mem = vec![0u8; 3 * LEN];
    server_mem[READ_AT..READ_AT + LEN].copy_from_slice(&pattern(LEN, 0x40));
    let server_mr = server.ctx.reg_mr_owned(server.pd, server_mem, ACCESS)?;
    // The client's memory: the message source and the READ destination.
    let mut client_mem = vec![0u8; 2 * LEN];
    client_mem[SRC_AT..SRC_AT + LEN].copy_from_slice(&pattern(LEN, 0x10));
    let client_mr = client.ctx.reg_mr_owned(client.pd, client_mem, ACCESS)?;

    // The server posts a receive for the SEND; the client posts WRITE, READ, SEND.
    let recv = RecvWr {
        wr_id: 100,
        sg_list: vec![server_mr.sge(SEND_AT as u64, LEN as u32)],
    };
    server.ctx.post_recv(server.qp, &[recv])?;
    let remote = |at: usize| RdmaWr {
        remote_addr: server_mr.addr + at as u64,
        rkey: server_mr.rkey,
    };
    let wr = |wr_id, opcode, local: usize, rdma| SendWr {
        wr_id,
        opcode,
        send_flags: send_flags::SIGNALED,
        sg_list: vec![client_mr.sge(local as u64, LEN as u32)],
        rdma,
        ..SendWr::default()
    };
    let wrs = [
        wr(1, WrOpcode::RdmaWrite, SRC_AT, remote(WRITE_AT)),
        wr(2, WrOpcode::RdmaRead, DST_AT, remote(READ_AT)),
        wr(3, WrOpcode::Send, SRC_AT, RdmaWr::default()),
    ];
    client.ctx.post_send(client.qp, &wrs)?;
    let c_wcs = client.ctx.wait_cq_for(client.cq, 3, WAIT)?;
    check_wc(&c_wcs[0], (1, WcOpcode::RdmaWrite, LEN))?;
    check_wc(&c_wcs[1], (2, WcOpcode::RdmaRead, LEN))?;
    check_wc(&c_wcs[2], (3, WcOpcode::Send, LEN))?;
    let s_wcs = server.ctx.wait_cq_for(server.cq, 1, WAIT)?;
    check_wc(&s_wcs[0], (100, WcOpcode::Recv, LEN))?;
    let cycles = server.ctx.now();

    // Both sides get their memory back, with what the devices wrote into it.
    let server_mem = server.ctx.dereg_mr_owned(server_mr)?;
    let client_mem = client.ctx.dereg_mr_owned(client_mr)?;
    let src = pattern(LEN, 0x10);
    check_bytes("server WRITE target", &server_mem, WRITE_AT, &src)?;
    check_bytes(
        "server READ source",
        &server_mem,
        READ_AT,
        &pattern(LEN, 0x40),
    )?;
    check_bytes("server SEND target", &server_mem, SEND_AT, &src)?;
    check_bytes("client source", &client_mem, SRC_AT, &src)?;
    check_bytes(
        "client READ target",
        &client_mem,
        DST_AT,
        &pattern(LEN, 0x40),
    )?;
    server.ctx.close()?;
    client.ctx.close()?;
    Ok(vec![
        format!("RC over two model NICs, PMTU 4096, application-owned memory registered in place"),
        format!("client -> server: RDMA WRITE {LEN} B, RDMA READ {LEN} B, SEND {LEN} B"),
        format!(
            "4 completions and {} bytes checked; {cycles} device cycles, {:.0?} wall clock",
            5 * LEN,
            start.elapsed()
        ),
    ])
}

fn main() -> ExitCode {
    match run() {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            println!("OK");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rc_owned: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

#[test]
fn rc_owned_runs_and_checks_every_byte() {
    if let Err(e) = run() {
        panic!("{e}");
    }
}
