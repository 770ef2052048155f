//! [`MrCheck`] against the model's `Tables::translate`: random MR tables and requests
//! near them, under every idle and backpressure pattern, every outcome reached.

use rocenic_hdl::bench::{Bench, Pattern, Rng};
use rocenic_hdl::control::ctx_tables::{mr_layout, MrEntry};
use rocenic_hdl::control::mr_check::*;
use rocenic_model::{Mr, ProtError, Tables};
use rocenic_proto::abi::cmd::mr_key;

const MA: usize = 4;

fn entry(mr: &Mr) -> MrEntry {
    let mut e = MrEntry::default();
    let mut put = |name: &str, v: u64, w: usize| {
        let at = mr_layout::offset(name);
        for b in 0..w {
            e = e.replace_bit(at + b, (v >> b) & 1 == 1);
        }
    };
    put("present", 1, 1);
    put("valid", u64::from(mr.valid), 1);
    put("tag", u64::from(mr.key & 0xff), 8);
    put("pdn", u64::from(mr.pdn), 8);
    put("access", u64::from(mr.access), 4);
    put("va", mr.va, 64);
    put("iova", mr.iova, 64);
    put("length", mr.length, 64);
    e
}

/// A table of random MRs: some absent, some invalidated, some at the top of the
/// address space.
fn random_tables(rng: &mut Rng) -> Tables {
    let mut t = Tables::new(8, 1 << MA, 4);
    for (i, slot) in t.mrs.iter_mut().enumerate() {
        if rng.percent(15) {
            continue;
        }
        let va = if rng.percent(10) {
            u64::MAX - rng.below(0x1000)
        } else {
            rng.next_u64() >> rng.below(40)
        };
        let length = rng.below(0x2000).min(u64::MAX - va);
        *slot = Some(Mr {
            key: mr_key(i as u32, rng.byte()),
            pdn: rng.below(3) as u32,
            access: rng.below(16) as u32,
            va,
            iova: rng.next_u64(),
            length,
            valid: rng.percent(90),
        });
    }
    t
}

/// A request near an MR most of the time (so that every outcome is reached).
fn random_request(rng: &mut Rng, t: &Tables) -> (u32, u32, u64, u32, u32) {
    let index = rng.below(1 << (MA + 1)) as u32; // half past the table
    let mr = t.mrs.get(index as usize).and_then(|m| m.as_ref());
    let tag = match mr {
        Some(m) if rng.percent(85) => (m.key & 0xff) as u8,
        _ => rng.byte(),
    };
    let key = mr_key(index, tag) | if rng.percent(3) { 0x8000_0000 } else { 0 };
    let pdn = match mr {
        Some(m) if rng.percent(85) => m.pdn,
        _ => rng.below(3) as u32,
    };
    let (va, len) = match mr {
        Some(m) if rng.percent(80) => {
            let off = rng.below(m.length + 8);
            let va = m.va.wrapping_add(off).wrapping_sub(rng.below(4));
            (va, rng.below(m.length.max(1) + 16) as u32)
        }
        _ => (rng.next_u64(), rng.below(0x100) as u32),
    };
    let len = if rng.percent(5) { 0 } else { len };
    let need = rng.below(16) as u32;
    (key, pdn, va, len, need)
}

fn run(pattern: Pattern, seed: u64, count: usize) -> [usize; 5] {
    let mut rng = Rng::new(seed);
    let t = random_tables(&mut rng);
    let mut b = Bench::new(MrCheck::<MA>::default(), |u| &mut u.clock);
    b.uut.reset.next = true;
    b.tick();
    b.uut.reset.next = false;
    let mut outcomes = [0usize; 5];
    let mut pending_read: Option<usize> = None;
    for _ in 0..count {
        let (key, pdn, va, len, need) = random_request(&mut rng, &t);
        let want = t.translate(key, pdn, va, u64::from(len), need);
        let u = &mut b.uut;
        u.port.req_valid.next = true;
        u.port.req_key.next = u64::from(key).into();
        u.port.req_pdn.next = u64::from(pdn & 0xff).into();
        u.port.req_va.next = va.into();
        u.port.req_len.next = u64::from(len).into();
        u.port.req_need.next = u64::from(need).into();
        let mut taken = false;
        let mut cycles = 0;
        loop {
            cycles += 1;
            assert!(cycles < 200, "stuck on key {key:#x}");
            let u = &mut b.uut;
            // The table port: data one cycle after a taken address.
            u.mr_rd.resp_valid.next = pending_read.is_some();
            u.mr_rd.resp_data.next = pending_read
                .and_then(|i| t.mrs[i].as_ref())
                .map_or_else(MrEntry::default, entry);
            u.mr_rd.req_ready.next = rng.percent(pattern.valid_pct);
            u.port.res_ready.next = rng.percent(pattern.ready_pct);
            b.settle();
            let u = &b.uut;
            let req_taken = u.port.req_valid.val() && u.port.req_ready.val();
            pending_read = (u.mr_rd.req_valid.val() && u.mr_rd.req_ready.val())
                .then(|| u.mr_rd.req_addr.val().index());
            let res = (u.port.res_valid.val() && u.port.res_ready.val()).then(|| {
                (
                    u.port.res_ok.val(),
                    u.m_res_err.val().to_u64(),
                    u.port.res_iova.val().to_u64(),
                )
            });
            b.tick();
            if req_taken {
                taken = true;
                b.uut.port.req_valid.next = false;
            }
            if let Some((ok, err, iova)) = res {
                assert!(taken);
                let got = if ok {
                    Ok(iova)
                } else {
                    Err(match err {
                        ERR_BAD_KEY => ProtError::BadKey,
                        ERR_WRONG_PD => ProtError::WrongPd,
                        ERR_NO_ACCESS => ProtError::NoAccess,
                        _ => ProtError::OutOfBounds,
                    })
                };
                assert_eq!(
                    got, want,
                    "key {key:#x} pdn {pdn} va {va:#x} len {len} need {need:#b}"
                );
                outcomes[match want {
                    Ok(_) => 0,
                    Err(ProtError::BadKey) => 1,
                    Err(ProtError::WrongPd) => 2,
                    Err(ProtError::NoAccess) => 3,
                    Err(ProtError::OutOfBounds) => 4,
                }] += 1;
                break;
            }
        }
    }
    outcomes
}

#[test]
fn every_check_matches_the_models_translate() {
    let mut seen = [0usize; 5];
    for (i, p) in Pattern::SWEEP.into_iter().enumerate() {
        let o = run(p, 0x3E0 + i as u64, 300);
        for (s, n) in seen.iter_mut().zip(o) {
            *s += n;
        }
    }
    assert!(
        seen.iter().all(|&n| n >= 10),
        "every outcome reached: {seen:?}"
    );
}
