//! Port groups, each declared once: a group's signals, its default and its wiring are
//! written in one place and reached as one field (`self.wf.dma_rd.req_valid`). A group is a
//! pair of RustHDL interfaces (`#[derive(LogicInterface)]`) that `port_group!` (below)
//! writes from one list: the requesting side (the client) and the serving side, whose
//! directions are the client's reversed. `Client::link(&mut self.port, &mut
//! self.child.port)` passes a child's group out through its parent, and
//! `Client::join(&mut self.child.port, &mut self.server.port)` ties a client to the block
//! that serves it. In the Verilog a group's signals are the block's ports
//! `<group>$<signal>`.

/// Declares a port group: the client struct, whose `out` signals it drives and `in` signals
/// it reads, and the server struct with the same signals the other way; each is the other's
/// `join` partner. `generics <const A: usize, ...>;` gives both structs the same const
/// parameters (widths), which the signal types may name.
macro_rules! port_group {
    (
        $(#[$client_meta:meta])* client $client:ident = $client_name:tt;
        $(#[$server_meta:meta])* server $server:ident = $server_name:tt;
        $(generics <$(const $g:ident: usize),*>;)?
        out { $($(#[$out_meta:meta])* $out:ident: $out_ty:ty,)* }
        in { $($(#[$in_meta:meta])* $inp:ident: $in_ty:ty,)* }
    ) => {
        $(#[$client_meta])*
        #[derive(LogicInterface, Default)]
        #[join = $server_name]
        pub struct $client $(<$(const $g: usize),*>)? {
            $($(#[$out_meta])* pub $out: Signal<Out, $out_ty>,)*
            $($(#[$in_meta])* pub $inp: Signal<In, $in_ty>,)*
        }

        $(#[$server_meta])*
        #[derive(LogicInterface, Default)]
        #[join = $client_name]
        pub struct $server $(<$(const $g: usize),*>)? {
            $($(#[$out_meta])* pub $out: Signal<In, $out_ty>,)*
            $($(#[$in_meta])* pub $inp: Signal<Out, $in_ty>,)*
        }
    };
}

pub mod cnt;
pub mod cqe;
pub mod ctl;
pub mod ctx;
pub mod dma_rd;
pub mod dma_wr;
pub mod job;
pub mod mr;
pub mod record;
pub mod reg;
pub mod rx;
