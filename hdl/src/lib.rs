//! rocenic RTL: the RoCE v2 engine written in RustHDL, and the tools that turn it into
//! Verilog and check it.
//!
//! # Conventions (every block follows them)
//!
//! - **One block per file**, each with its own test bench in that file: RustHDL simulation
//!   (see [`bench`](mod@bench)) sweeping idle and backpressure patterns, checked against the software
//!   reference in `rocenic_proto`. Every block that can be a top also passes the quality
//!   gates in `tests/` (Verilator lint, yosys checks and synthesis; see [`gates`]).
//! - **Ports**: `clock`, `reset` (synchronous, active high), then `s_<bus>_*` for buses into
//!   the block and `m_<bus>_*` for buses out of it. Status and errors come out on named pins
//!   beside the data (`m_icrc_ok`, `m_icrc_len_err`), never as magic data values.
//! - **Handshake** (AXI-Stream style): a transfer happens in a cycle where `valid && ready`
//!   at the rising edge; `valid` never waits for `ready`, and once raised, `valid` and the
//!   data hold until the transfer.
//! - **Frame streams**: 512-bit beats (64 bytes) with `tdata`, `tkeep` (64 bits, one per byte
//!   lane, contiguous from lane 0), `tlast`, `tvalid`, `tready`. Byte 0 of the frame is in
//!   `tdata[7:0]` (lane 0), byte 1 in `tdata[15:8]`, as in verilog-ethernet and Corundum.
//!   Frames start at the destination MAC address and carry no FCS (the MAC strips/adds it).
//!   Multi-byte values taken from a beat are therefore little-endian in lane order and
//!   must be byte-swapped where the wire is big-endian.
//! - **Registers**: `DFF` widgets set up with `dff_setup!` (each holds its value unless
//!   assigned), all next-state logic in the block's one `#[hdl_gen] fn update`, reset
//!   applied last in `update` so it wins.
//! - **Widths**: derived from parameters in constructors, which assert that parameters fit
//!   (bad combinations refuse to elaborate, with a message). Constants used in logic are
//!   `Constant<Bits<W>>` fields of the exact width (RustHDL writes bare literals as 32- or
//!   64-bit numbers, which Verilator `-Wall` flags). Never widen with `bit_cast` (it writes
//!   a width-mismatched mask); narrow with `get_bits`, and keep every bit of a local signal
//!   used so the lint sees no unused bits.
//! - **Temporaries** are `Signal<Local, _>` fields (`let` is not allowed in `#[hdl_gen]`),
//!   each assigned on every path before use. Never read a local after writing it in order
//!   to accumulate (`x = x ^ y` in a loop): the RustHDL simulator and the Verilog disagree
//!   on that. Wide linear logic (CRC matrices) goes through [`gf2::Gf2Map`] instead.
//! - **Sub-block outputs** are consumed in statements of their own (`self.r.d.next =
//!   self.leaf.y.val()`, `self.b.x.next = self.a.y.val()`). RustHDL writes a block's
//!   `update` as one `always @(*)`; when a statement that reads a sub-block's output shares
//!   variables with the logic computing that sub-block's inputs (a multiplexer between two
//!   chained leaves, a register load inside a large `if`), Verilator sees a loop through
//!   the block (UNOPTFLAT). Put such multiplexers inside the leaf (as
//!   [`gf2_step::Gf2Step`] and [`masked_load::MaskedLoad`] do).
//! - **Names**: no Verilog or SystemVerilog keyword as a field name (`reg`, `force`,
//!   `wire`...): RustHDL refuses only a few of them, the rest break the generated Verilog.
//!
//! # Blocks
//!
//! - [`icrc::Icrc`]: the RoCE v2 ICRC, generate (TX) or check (RX), 64 bytes per cycle.
//! - [`gf2::Gf2Map`]: `y = M·x` over GF(2), the leaf under every CRC.
//! - [`gf2_step::Gf2Step`]: `y = en ? M·x : x`, for log-depth "advance by k" chains.
//! - [`masked_load::MaskedLoad`]: a beat register's next value, loading with byte lanes
//!   zeroed or holding (clock enable and synchronous reset on the register's pins).
//!
//! - [`control::Control`]: the control plane — [`regfile::RegFile`] (BAR0) and
//!   [`cmd::CmdEngine`] (the mailbox commands over the [`ctx_tables`] in block RAM).
//! - [`leaves`]: small custom-Verilog leaves of the control plane (word select, word bank,
//!   counter bank, record pack/unpack).
//!
//! Helpers: [`crc32`] (the CRC-32 as GF(2) matrices), [`bench`](mod@bench) (test benches), [`gates`]
//! (Verilator and yosys gates, also behind `rocenic-hdl --synth`).
//!
//! The current top ([`Design`]) is written by the `rocenic-hdl` binary:
//! `cargo run -p rocenic-hdl --release -- --out DIR` writes `DIR/top.v`.

pub mod bench;
pub mod cmd;
pub mod control;
pub mod crc32;
pub mod ctx_tables;
pub mod gates;
pub mod gf2;
pub mod gf2_step;
pub mod icrc;
pub mod leaves;
pub mod masked_load;
pub mod regfile;

/// The RustHDL names the blocks use (what `rust_hdl::prelude` re-exports from the core and
/// widget crates).
pub mod prelude {
    pub use rust_hdl_core::prelude::*;
    pub use rust_hdl_widgets::prelude::*;
}

use prelude::Block;

/// log2 of the QP contexts of the generated designs (`--qps`, 256).
pub const QP_LOG: usize = 8;
/// log2 of the MR entries of the generated designs (`--mrs`, 1024).
pub const MR_LOG: usize = 10;

use icrc::{Icrc, IcrcMode};

/// A design that can be written as the Verilog top (module `top`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// The RX ICRC checker ([`Icrc`] in [`IcrcMode::Check`]). The default top for now.
    IcrcCheck,
    /// The TX ICRC generator ([`Icrc`] in [`IcrcMode::Generate`]).
    IcrcGenerate,
    /// The control plane: register file, command engine, context tables
    /// ([`control::Control`], 256 QPs, 1024 MRs).
    Control,
    /// The BAR0 register file alone ([`regfile::RegFile`], 256 QPs, 1024 MRs).
    RegFile,
}

impl Design {
    /// Every design, the default first.
    pub const ALL: [Design; 4] = [
        Design::IcrcCheck,
        Design::IcrcGenerate,
        Design::Control,
        Design::RegFile,
    ];

    /// The name the generator's `--top` option takes.
    pub fn name(self) -> &'static str {
        match self {
            Design::IcrcCheck => "icrc-check",
            Design::IcrcGenerate => "icrc-generate",
            Design::Control => "control",
            Design::RegFile => "regfile",
        }
    }

    /// The design of that name.
    pub fn from_name(name: &str) -> Option<Design> {
        Design::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Its Verilog, with `top` as the top module.
    pub fn verilog(self) -> String {
        match self {
            Design::IcrcCheck => generate_verilog(&mut Icrc::new(IcrcMode::Check)),
            Design::IcrcGenerate => generate_verilog(&mut Icrc::new(IcrcMode::Generate)),
            Design::Control => generate_verilog(&mut control::Control::<QP_LOG, MR_LOG>::new()),
            Design::RegFile => generate_verilog(&mut regfile::RegFile::new(
                regfile::CtrlParams::new(QP_LOG, MR_LOG),
            )),
        }
    }
}

/// The Verilog of a block, its module named `top` and each sub-block a module named after
/// its path (`top$rem` ...), all in one text. Panics if the block is not fully connected
/// (RustHDL's own checks: an undriven input, a logic loop, a written input).
pub fn generate_verilog<B: Block>(top: &mut B) -> String {
    top.connect_all();
    let body = prelude::generate_verilog(top);
    format!(
        "// Generated by rocenic-hdl {} (RustHDL). Do not edit: change hdl/src and regenerate.\n{}",
        env!("CARGO_PKG_VERSION"),
        body
    )
}
