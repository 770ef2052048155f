//! The BAR0 command mailbox (protocol in `rocenic_proto::abi::cmd`).
//!
//! A command: wait until `CMD_STATUS` is not busy, write all 16 argument words, write the
//! opcode, poll `CMD_STATUS` (letting time pass between polls) until the busy bit clears,
//! then map the status to [`Error::Cmd`] or read the result words. Every wait is bounded by
//! the context's command timeout.

use rocenic_proto::abi::cmd::{Args, CmdOpcode, CmdStatus, Outs};
use rocenic_proto::abi::regs;

use crate::backend::Backend;
use crate::{Error, Result};

/// Longest pause between two polls of `CMD_STATUS`, in cycles. Polls start one cycle apart
/// and back off up to this, so a fast device answers quickly and a slow one is not hammered.
const MAX_POLL_QUANTUM: u64 = 64;

/// Polls `CMD_STATUS` until the busy bit is clear or `timeout` cycles have passed since
/// `start`. Returns the last status word read, or `None` on timeout.
fn wait_idle(be: &mut dyn Backend, start: u64, timeout: u64) -> Option<u32> {
    let mut quantum = 1;
    loop {
        let s = be.bar_read(regs::CMD_STATUS);
        if s & regs::CMD_STATUS_BUSY == 0 {
            return Some(s);
        }
        if be.now().saturating_sub(start) >= timeout {
            return None;
        }
        be.wait(quantum);
        quantum = (quantum * 2).min(MAX_POLL_QUANTUM);
    }
}

/// Runs one command. `object` names what it acts on, for error messages ("QP 5").
/// `n_outs` result words are read on success (the rest of the returned array is 0).
pub(crate) fn execute(
    be: &mut dyn Backend,
    timeout: u64,
    op: CmdOpcode,
    args: &Args,
    object: &dyn Fn() -> String,
    n_outs: u32,
) -> Result<Outs> {
    let start = be.now();
    if wait_idle(be, start, timeout).is_none() {
        return Err(Error::CmdBusy {
            op,
            cycles: be.now() - start,
        });
    }
    for (i, a) in args.iter().enumerate() {
        be.bar_write(regs::cmd_arg(i as u32), *a);
    }
    be.bar_write(regs::CMD_OPCODE, op.into());
    let start = be.now();
    let Some(s) = wait_idle(be, start, timeout) else {
        return Err(Error::CmdTimeout {
            op,
            object: object(),
            cycles: be.now() - start,
        });
    };
    let status = CmdStatus::from(s & 0xff);
    if status != CmdStatus::Ok {
        return Err(Error::Cmd {
            op,
            object: object(),
            status,
        });
    }
    let mut outs: Outs = [0; 8];
    for (i, o) in outs.iter_mut().enumerate().take(n_outs as usize) {
        *o = be.bar_read(regs::cmd_out(i as u32));
    }
    Ok(outs)
}
