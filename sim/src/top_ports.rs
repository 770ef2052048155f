//! The engine's top-level ports, listed once: [`TOP_PORTS`] (name, direction, width, meaning,
//! grouped as the contract groups them).
//!
//! Everything else that names the engine's ports is made from this list or checked against
//! it:
//!
//! - [`crate::rtl_device`] looks every port up through the handles made by the same macro
//!   invocation (one field per row), and checks a Verilated model against the list
//!   ([`crate::rtl_device::check_ports`]);
//! - the table in `docs/rtl-architecture.md` ("The engine's top-level ports") is
//!   [`markdown_table`], kept equal by a test (`sim/tests/top_ports.rs`), and
//!   `firmware/common/scripts/contract_stub.py` reads its stub and its checks from that
//!   table;
//! - the same test checks the generated engine's Verilog module `top`
//!   (`rocenic_hdl::engine::Engine`), the board wrapper's engine instance
//!   (`firmware/u55c/rtl/rocenic_u55c.sv`) and the engine side of the XDMA adapter
//!   (`firmware/common/rtl/rocenic_xdma_dma.sv`) against it; `sim/tests/rtl/contract_top.v`
//!   is checked whenever it is Verilated.
//!
//! Widths come from where they are defined: the register port from the BAR0 size and the
//! register width of `proto::abi::regs`, the DMA and MAC buses from the hdl constants their
//! blocks are built with.

use rocenic_hdl::{common::icrc, dma::dma_rd_mux, dma::dma_wr_mux};
use rocenic_proto::abi::regs::BAR0_SIZE;

use crate::rtl::{Port, PortDir, RtlError, VerilatedModel};

/// One port of the engine's top.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopPort {
    /// Its Verilog name.
    pub name: &'static str,
    /// Its direction, as seen from the engine.
    pub dir: PortDir,
    /// Its width in bits.
    pub width: u32,
    /// What it carries (one table cell of the contract).
    pub meaning: &'static str,
    /// The group this port opens, if it is the first of one.
    pub group: Option<PortGroup>,
}

/// A heading row of the contract table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortGroup {
    /// Bold title.
    pub title: &'static str,
    /// Rule that holds for the whole group (may be empty).
    pub note: &'static str,
}

const fn bits(n: usize) -> u32 {
    assert!(n <= u32::MAX as usize);
    n as u32
}

/// `reg_addr`: a byte offset in BAR0.
const REG_ADDR_BITS: u32 = BAR0_SIZE.trailing_zeros();
const _: () = assert!(BAR0_SIZE.is_power_of_two());
/// Every BAR0 register is 32 bits wide (`proto::abi::regs`), as `Device::bar_read` returns.
const REG_BITS: u32 = u32::BITS;
const ADDR_BITS: u32 = bits(dma_rd_mux::ADDR_BITS);
const LEN_BITS: u32 = bits(dma_rd_mux::LEN_BITS);
const TAG_BITS: u32 = bits(dma_rd_mux::TAG_BITS);
const DMA_DATA_BITS: u32 = bits(dma_rd_mux::DATA_BITS);
const DMA_KEEP_BITS: u32 = bits(dma_wr_mux::KEEP_BITS);
const MAC_DATA_BITS: u32 = bits(icrc::DATA_BITS);
const MAC_KEEP_BITS: u32 = bits(icrc::BEAT_BYTES);

/// Declares the table and the adapter's port handles from one list of rows.
macro_rules! top_ports {
    ($(
        $([$title:literal, $note:literal])?
        $name:ident: $dir:ident, $width:expr, $meaning:literal;
    )*) => {
        /// The engine's top-level ports, in the order of its Verilog module `top`.
        pub const TOP_PORTS: &[TopPort] = &[$(
            TopPort {
                name: stringify!($name),
                dir: PortDir::$dir,
                width: $width,
                meaning: $meaning,
                group: top_ports!(@group $($title, $note)?),
            },
        )*];

        /// A handle of every top port, looked up once (one field per row of [`TOP_PORTS`]).
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct TopHandles {
            $(pub(crate) $name: Port,)*
        }

        impl TopHandles {
            pub(crate) fn lookup(m: &VerilatedModel) -> Result<TopHandles, RtlError> {
                Ok(TopHandles {
                    $($name: m.port(stringify!($name))?,)*
                })
            }
        }
    };
    (@group) => { None };
    (@group $title:literal, $note:literal) => {
        Some(PortGroup { title: $title, note: $note })
    };
}

top_ports! {
    clock: Input, 1, "core clock (250 MHz design target)";
    reset: Input, 1, "synchronous reset, active high";
    ["BAR0 register port", "one access per transfer, reads answered in order"]
    reg_valid: Input, 1, "request valid";
    reg_ready: Output, 1, "request ready";
    reg_write: Input, 1, "1 = write `reg_wdata`, 0 = read";
    reg_addr: Input, REG_ADDR_BITS, "byte offset in BAR0 (`proto::abi::regs`), 4-byte aligned";
    reg_wdata: Input, REG_BITS, "write data";
    reg_rdata_valid: Output, 1, "pulses once per accepted read, any number of cycles later";
    reg_rdata: Output, REG_BITS, "the read's data, valid with `reg_rdata_valid`";
    ["DMA read requests", ""]
    dma_rd_req_valid: Output, 1, "request valid";
    dma_rd_req_ready: Input, 1, "request ready";
    dma_rd_req_addr: Output, ADDR_BITS, "IOVA of the first byte";
    dma_rd_req_len: Output, LEN_BITS, "bytes, 1..=8192";
    dma_rd_req_tag: Output, TAG_BITS, "returned with the response; the engine routes by it";
    ["DMA read responses", "in request order, one response's beats never interleaved with another's"]
    dma_rd_resp_valid: Input, 1, "beat valid";
    dma_rd_resp_ready: Output, 1, "beat ready";
    dma_rd_resp_data: Input, DMA_DATA_BITS, "the bytes packed from lane 0: byte `addr + 64·i + j` in lane `j` of beat `i`; `ceil(len/64)` beats, lanes past `len` are zero";
    dma_rd_resp_tag: Input, TAG_BITS, "the request's tag";
    dma_rd_resp_last: Input, 1, "last beat of the response";
    dma_rd_resp_err: Input, 1, "the IOMMU refused the read: a single beat, `last` set, data zero";
    ["DMA write requests", "posted; performed in order"]
    dma_wr_req_valid: Output, 1, "request valid";
    dma_wr_req_ready: Input, 1, "request ready";
    dma_wr_req_addr: Output, ADDR_BITS, "IOVA of the first byte";
    dma_wr_req_len: Output, LEN_BITS, "bytes, 1..=8192";
    dma_wr_data_valid: Output, 1, "data beat valid; the data of request `n` follows its request, in request order";
    dma_wr_data_ready: Input, 1, "data beat ready";
    dma_wr_data: Output, DMA_DATA_BITS, "packed from lane 0 as for reads; `ceil(len/64)` beats";
    dma_wr_data_keep: Output, DMA_KEEP_BITS, "byte enables (all ones but on the last beat)";
    dma_wr_data_last: Output, 1, "last beat of the request's data";
    dma_wr_status_valid: Input, 1, "one pulse per write request, in request order, once it is done";
    dma_wr_status_err: Input, 1, "the IOMMU refused the write (nothing was written)";
    ["MAC TX", "to the 100G MAC, frames from the destination MAC, no FCS"]
    mac_tx_tdata: Output, MAC_DATA_BITS, "byte 0 of a beat in bits 7:0";
    mac_tx_tkeep: Output, MAC_KEEP_BITS, "all ones but on the last beat, contiguous from lane 0";
    mac_tx_tlast: Output, 1, "last beat of a frame";
    mac_tx_tvalid: Output, 1, "beat valid; a frame's beats are sent back to back once started";
    mac_tx_tready: Input, 1, "the MAC takes the beat (it may stall)";
    ["MAC RX", "from the MAC; no backpressure, as a CMAC has none"]
    mac_rx_tdata: Input, MAC_DATA_BITS, "as on TX";
    mac_rx_tkeep: Input, MAC_KEEP_BITS, "as on TX";
    mac_rx_tlast: Input, 1, "last beat of a frame";
    mac_rx_tvalid: Input, 1, "beat valid";
    mac_rx_tuser: Input, 1, "on the `tlast` beat: the MAC saw a bad FCS or an error; the frame is dropped";
    mac_rx_pause: Output, 1, "pause request (PFC XOFF): the RX buffer is nearly full; a MAC with priority flow control sends pause frames while it is high (`hdl/src/rx/rx_fifo.rs`, \"Pause\")";
}

/// The port named `name`, if the contract has one.
pub fn top_port(name: &str) -> Option<&'static TopPort> {
    TOP_PORTS.iter().find(|p| p.name == name)
}

/// The contract table of `docs/rtl-architecture.md`: a header, then per group a bold heading
/// row and one row per port (`| \`name\` | in/out | width | meaning |`).
pub fn markdown_table() -> String {
    let mut s = String::from("| port | dir | width | meaning |\n|---|---|---|---|\n");
    for p in TOP_PORTS {
        if let Some(g) = p.group {
            s += &format!("| **{}** | | | {} |\n", g.title, g.note);
        }
        let dir = match p.dir {
            PortDir::Input => "in",
            PortDir::Output => "out",
            PortDir::Inout => "inout",
        };
        s += &format!("| `{}` | {dir} | {} | {} |\n", p.name, p.width, p.meaning);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_widths_match_the_adapter() {
        for (i, p) in TOP_PORTS.iter().enumerate() {
            assert!(
                TOP_PORTS[..i].iter().all(|q| q.name != p.name),
                "{} twice",
                p.name
            );
            assert!(p.width >= 1 && p.dir != PortDir::Inout, "{p:?}");
        }
        // The adapter packs beats of BEAT_BYTES and addresses BAR0 of BAR0_SIZE bytes.
        let beat = crate::rtl_device::BEAT_BYTES as u32;
        for n in [
            "dma_rd_resp_data",
            "dma_wr_data",
            "mac_tx_tdata",
            "mac_rx_tdata",
        ] {
            assert_eq!(top_port(n).unwrap().width, 8 * beat, "{n}");
        }
        for n in ["dma_wr_data_keep", "mac_tx_tkeep", "mac_rx_tkeep"] {
            assert_eq!(top_port(n).unwrap().width, beat, "{n}");
        }
        assert_eq!(1u32 << top_port("reg_addr").unwrap().width, BAR0_SIZE);
        let len = top_port("dma_rd_req_len").unwrap().width;
        assert!(crate::rtl_device::MAX_DMA_LEN < 1 << len);
    }

    #[test]
    fn markdown_has_a_row_per_port_and_group() {
        let t = markdown_table();
        let groups = TOP_PORTS.iter().filter(|p| p.group.is_some()).count();
        assert_eq!(t.lines().count(), 2 + TOP_PORTS.len() + groups);
        assert!(
            t.contains("| `reg_addr` | in | 17 | byte offset in BAR0"),
            "{t}"
        );
        assert!(t.contains("| `mac_rx_pause` | out | 1 |"), "{t}");
    }
}
