//! Port groups, each declared once: a group's signals, its default and its wiring are
//! written in one place and reached as one field (`self.wf.dma_rd.req_valid`). A group is a
//! RustHDL interface (`#[derive(LogicInterface)]`): its requesting side and its serving side
//! are two structs whose fields mirror each other; `Client::link(&mut self.port, &mut
//! self.child.port)` passes a child's group out through its parent, and `Client::join(&mut
//! self.child.port, &mut self.server.port)` ties a client to the block that serves it. In
//! the Verilog a group's signals are the block's ports `<group>$<signal>`.

pub mod dma_rd;
pub mod dma_wr;
pub mod mr;
