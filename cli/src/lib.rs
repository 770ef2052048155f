//! The `rocenic` command-line tool, as a library so that its commands can be tested.
//!
//! - `rocenic demo`: every operation kind at many sizes and path MTUs between two NICs,
//!   every completion and every byte of both hosts' memory checked.
//! - `rocenic perf`: a perftest-like throughput run counted in simulated cycles.
//! - `rocenic pingpong`: `ibv_rc_pingpong`'s counterpart on a real wire (`--wire udp:…`),
//!   to play either side against the original.
//! - `rocenic perftest`: perftest's `ib_{write,read,send,atomic}_bw` counterpart on a real
//!   wire, speaking perftest's own handshake.
//! - `rocenic fuzz`: random and mutated frames into a NIC with live QPs.
//! - `rocenic replay`: the frames of a capture into one NIC, and what it did with each.
//! - `rocenic exec`: runs an unmodified verbs program on a rocenic NIC through the
//!   libibverbs-compatible library (`docs/ibverbs.md`).

pub mod demo;
pub mod exec;
pub mod fuzz;
pub mod pattern;
pub mod perf;
pub mod perftest;
pub mod pingpong;
pub mod plot;
pub mod progress;
pub mod replay;
pub mod setup;
pub mod stats;
pub mod wire;

use clap::{Parser, Subcommand};

/// rocenic: drive a rocenic RoCE v2 NIC: the behavioural model, the Verilated RTL engine or
/// a board through VFIO.
#[derive(Debug, Parser)]
#[command(name = "rocenic", version, about)]
pub struct Cli {
    /// More log output on stderr: -v for info, -vv for debug (RUST_LOG, an EnvFilter
    /// such as `rocenic_driver=trace`, overrides it).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Connect two NICs and run every operation kind at many sizes and path MTUs, checking
    /// every completion and every byte of memory.
    Demo(demo::DemoArgs),
    /// Measure throughput like perftest, in simulated cycles.
    Perf(perf::PerfArgs),
    /// Ping-pong SENDs with ibv_rc_pingpong (or another rocenic) over a real wire, as
    /// server (no SERVER argument) or client.
    Pingpong(pingpong::PingpongArgs),
    /// Bandwidth tests with perftest's ib_write_bw, ib_read_bw, ib_send_bw or
    /// ib_atomic_bw (or another rocenic) over a real wire, as server or client.
    Perftest(perftest::PerftestArgs),
    /// Inject random and mutated frames into a NIC with live QPs; with --backend rtl, hold
    /// the RTL to the model on the same input.
    Fuzz(fuzz::FuzzArgs),
    /// Feed the frames of a pcap capture into one NIC with QPs set up from the command
    /// line, and report what it did with each: accepted (and the ACKs, bytes written and
    /// completions that followed), NAKed (which NAK), dropped (and why) or skipped.
    Replay(replay::ReplayArgs),
    /// Run an unmodified verbs program (ibv_rc_pingpong, ...) with its verbs served by a
    /// rocenic NIC, device rocenic0, through the libibverbs-compatible library.
    Exec(exec::ExecArgs),
}

/// Runs a parsed command line; what it prints goes to `out`.
pub fn run(cli: Cli, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(a) => demo::run(&a, out),
        Command::Perf(a) => perf::run(&a, out),
        Command::Pingpong(a) => pingpong::run(&a, out),
        Command::Perftest(a) => perftest::run(&a, out),
        Command::Fuzz(a) => fuzz::run(&a, out),
        Command::Replay(a) => replay::run(&a, out),
        Command::Exec(a) => exec::run(&a, out),
    }
}

/// `rocenic COMMAND ARGS` on a UDP wire with our port's addresses, as the tests of the wired
/// commands parse it.
#[cfg(test)]
pub(crate) fn parse_on_a_wire(command: &str, args: &[&str]) -> Result<Cli, clap::Error> {
    use clap::Parser;
    let port = [
        "--wire",
        "udp:1:2",
        "--mac",
        "02:00:00:00:00:01",
        "--ip",
        "10.0.0.1",
    ];
    Cli::try_parse_from(["rocenic", command].iter().chain(args).chain(&port))
}
