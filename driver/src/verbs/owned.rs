//! Memory the application owns, registered where it is, and waits bounded by wall-clock
//! time.
//!
//! `ibv_reg_mr(pd, addr, length, access)` registers memory the application allocated; the
//! device then reads and writes it in place. In safe Rust the registration must keep the
//! memory alive and unaliased while the device may write into it, so here the application
//! hands its buffer (a `Vec<u8>`) to the [`Context`] and gets it back, with what the device
//! wrote, when the registration ends:
//!
//! ```text
//! let mr = ctx.reg_mr_owned(pd, vec, access)?;     ibv_reg_mr(pd, vec.as_ptr(), len, access)
//! mr.sge(0, 64), mr.rkey, mr.addr                  the ibv_mr fields, through Deref<Target = Mr>
//! ctx.read(&mr.buf(), off, &mut out)?              the CPU's view while it is registered
//! let vec = ctx.dereg_mr_owned(mr)?;               ibv_dereg_mr, and the memory comes back
//! ```
//!
//! No byte is copied through the driver: the backend maps the vector's own pages for the
//! device (through the VFIO DMA map ioctl on hardware; in a simulated world the vector
//! becomes the node's host memory behind its IOMMU model). Every failure gives the memory
//! back in a [`Rejected`].

use std::ops::Deref;
use std::time::{Duration, Instant};

use super::{BufEntry, Buffer, Context, Cq, Mr, Pd, Wc};
use crate::{Error, Rejected, Result};

/// A memory region over memory the application handed to [`Context::reg_mr_owned`]. It is
/// not `Copy`: [`Context::dereg_mr_owned`] consumes it and gives the memory back. It
/// dereferences to the [`Mr`] (`addr`, `length`, `lkey`, `rkey`, [`Mr::sge`]).
///
/// Dropping it without deregistering leaves the registration and the memory with the
/// context, which releases both when it is closed or dropped.
#[derive(Debug, PartialEq, Eq)]
pub struct OwnedMr {
    mr: Mr,
    buf: Buffer,
}

impl OwnedMr {
    /// The registration's handle (a copy: it names the region for work requests).
    pub fn mr(&self) -> Mr {
        self.mr
    }

    /// The buffer holding the application's memory, for [`Context::read`] and
    /// [`Context::write`] while it is registered, or for more registrations over it.
    pub fn buf(&self) -> Buffer {
        self.buf
    }

    /// Offset of the region's first byte in the application's memory.
    pub fn offset(&self) -> usize {
        (self.mr.addr - self.buf.addr) as usize
    }
}

impl Deref for OwnedMr {
    type Target = Mr;

    fn deref(&self) -> &Mr {
        &self.mr
    }
}

impl Context {
    /// Takes `mem`, memory the application owns, and maps all of it for device DMA where
    /// it is (no copy). The [`Buffer`] it returns works like one from
    /// [`Context::alloc_buf`] (register MRs over it, [`Context::read`], [`Context::write`]);
    /// [`Context::take_buf`] gives `mem` back. Empty memory is refused. On failure `mem`
    /// comes back in the [`Rejected`].
    pub fn adopt_buf(&mut self, mem: Vec<u8>) -> Result<Buffer, Rejected<Vec<u8>>> {
        if mem.is_empty() {
            return Err(Rejected {
                error: Error::InvalidArgument("buffer of 0 bytes".into()),
                value: mem,
            });
        }
        let region = self.be.adopt_dma(mem)?;
        self.bufs.insert(
            region.id,
            BufEntry {
                region,
                len: region.len,
            },
        );
        Ok(Buffer {
            id: region.id,
            addr: region.va,
            len: region.len,
        })
    }

    /// Unmaps a buffer from [`Context::adopt_buf`] and gives the application's memory back,
    /// holding whatever the device wrote into it. Refused while an MR covers it, and for a
    /// buffer from [`Context::alloc_buf`] (there is no application memory to give back).
    pub fn take_buf(&mut self, buf: &Buffer) -> Result<Vec<u8>> {
        self.buf_entry(buf)?;
        self.refuse_if_registered(buf, None)?;
        let mem = self.be.release_dma(buf.id)?;
        self.bufs.remove(&buf.id);
        Ok(mem)
    }

    /// Refuses with [`Error::InUse`] when an MR other than `except` (an lkey) covers `buf`.
    fn refuse_if_registered(&self, buf: &Buffer, except: Option<u32>) -> Result<()> {
        let users: Vec<String> = self
            .mrs
            .entries
            .values()
            .filter(|m| m.buf_id == buf.id && Some(m.key) != except)
            .map(|m| format!("MR lkey {:#x}", m.key))
            .collect();
        if users.is_empty() {
            Ok(())
        } else {
            Err(Error::InUse {
                what: "buffer",
                id: buf.id,
                users: users.join(", "),
            })
        }
    }

    /// Registers all of `mem`, memory the application owns, in place (`ibv_reg_mr` over
    /// the application's buffer): the device reads and writes those bytes directly, with
    /// the access rules of [`Context::reg_mr`]. The memory comes back from
    /// [`Context::dereg_mr_owned`]; on failure, in the [`Rejected`].
    pub fn reg_mr_owned(
        &mut self,
        pd: Pd,
        mem: Vec<u8>,
        access: u32,
    ) -> Result<OwnedMr, Rejected<Vec<u8>>> {
        let length = mem.len();
        self.reg_mr_owned_range(pd, mem, 0, length, access)
    }

    /// Registers `length` bytes at `offset` of `mem` (so the region may start anywhere,
    /// not only on a page boundary, as `ibv_reg_mr` allows); the whole of `mem` is mapped
    /// and given back by [`Context::dereg_mr_owned`]. Zero length, a range outside `mem`,
    /// an unknown PD and bad access flags are refused, and `mem` comes back.
    pub fn reg_mr_owned_range(
        &mut self,
        pd: Pd,
        mem: Vec<u8>,
        offset: usize,
        length: usize,
        access: u32,
    ) -> Result<OwnedMr, Rejected<Vec<u8>>> {
        let refuse = |error, value| Err(Rejected { error, value });
        if length == 0 {
            return refuse(
                Error::InvalidArgument("memory region of 0 bytes".into()),
                mem,
            );
        }
        if !matches!(offset.checked_add(length), Some(end) if end <= mem.len()) {
            let msg = format!(
                "memory region of {length} bytes at offset {offset} does not fit the {} bytes given",
                mem.len()
            );
            return refuse(Error::InvalidArgument(msg), mem);
        }
        if let Err(error) = self.pds.get(pd.pdn) {
            return refuse(error, mem);
        }
        let buf = self.adopt_buf(mem)?;
        match self.reg_mr_range(pd, &buf, offset, length, access) {
            Ok(mr) => Ok(OwnedMr { mr, buf }),
            Err(error) => match self.take_buf(&buf) {
                Ok(value) => refuse(error, value),
                // Cannot happen on a backend that just mapped it; if it does, the memory
                // stays with the context (released when it closes), never reused while
                // the device might reach it.
                Err(_) => refuse(error, Vec::new()),
            },
        }
    }

    /// Deregisters an [`OwnedMr`] (`ibv_dereg_mr`) and gives the application's memory back,
    /// with everything the device wrote into it. Refused (the `OwnedMr` comes back in the
    /// [`Rejected`], so it can be retried) while other MRs cover the same memory or when
    /// the device refuses the deregistration.
    pub fn dereg_mr_owned(&mut self, mr: OwnedMr) -> Result<Vec<u8>, Rejected<OwnedMr>> {
        let live = matches!(
            self.mrs.get(super::abi_cmd::mr_index(mr.lkey)),
            Ok(e) if e.key == mr.lkey && e.buf_id == mr.buf.id
        );
        let r = self
            .refuse_if_registered(&mr.buf, Some(mr.lkey))
            .and_then(|()| if live { self.dereg_mr(&mr.mr) } else { Ok(()) })
            .and_then(|()| self.take_buf(&mr.buf));
        r.map_err(|error| Rejected { error, value: mr })
    }

    /// Polls until `n` completions have arrived or `timeout` of wall-clock time has passed,
    /// letting the device run between polls (a simulated device is stepped
    /// [`Context::set_poll_quantum`] cycles at a time, a real one is polled). Returns the
    /// `n` completions, or fails with [`Error::CqWaitTimeout`] holding the ones that did
    /// arrive. [`Context::wait_cq`] is the same wait bounded in device cycles.
    pub fn wait_cq_for(&mut self, cq: Cq, n: usize, timeout: Duration) -> Result<Vec<Wc>> {
        let start = Instant::now();
        let quantum = self.poll_quantum;
        self.wait_cq_with(cq, n, |_, got| {
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(Error::CqWaitTimeout {
                    cqn: cq.cqn,
                    wanted: n,
                    waited,
                    got: std::mem::take(got),
                });
            }
            Ok(quantum)
        })
    }
}
