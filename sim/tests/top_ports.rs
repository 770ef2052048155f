//! Everything that lists the engine's top ports agrees with the one table,
//! `rocenic_sim::top_ports::TOP_PORTS`: the contract table in `docs/rtl-architecture.md`
//! (generated from it), the generated engine's Verilog module `top`, the hand-written
//! contract design `sim/tests/rtl/contract_top.v`, the board wrapper's engine instance and
//! the engine side of the XDMA adapter in `firmware/`.
//!
//! After changing the table, `ROCENIC_BLESS=1 cargo test -p rocenic-sim --test top_ports`
//! rewrites the docs table (and the test still fails that run, naming the file it wrote).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rocenic_sim::rtl::PortDir;
use rocenic_sim::top_ports::{markdown_table, TOP_PORTS};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

const DOC: &str = "docs/rtl-architecture.md";
const BEGIN: &str =
    "<!-- top-ports: generated from sim/src/top_ports.rs; sim/tests/top_ports.rs checks it -->";
const END: &str = "<!-- top-ports: end -->";

#[test]
fn docs_table_is_the_one_generated_from_the_table() {
    let doc = read(DOC);
    let start = doc
        .find(BEGIN)
        .unwrap_or_else(|| panic!("{DOC} lacks the marker line {BEGIN}"))
        + BEGIN.len()
        + 1;
    let end = doc[start..]
        .find(END)
        .unwrap_or_else(|| panic!("{DOC} lacks the marker line {END}"))
        + start;
    let want = markdown_table();
    if doc[start..end] != want {
        if std::env::var_os("ROCENIC_BLESS").is_some() {
            let new = format!("{}{want}{}", &doc[..start], &doc[end..]);
            std::fs::write(repo().join(DOC), new).expect("write the docs");
            panic!("{DOC}: port table rewritten from TOP_PORTS; run again");
        }
        panic!(
            "{DOC}: the port table differs from sim/src/top_ports.rs; rerun with \
             ROCENIC_BLESS=1 to rewrite it. Expected:\n{want}"
        );
    }
}

/// A port declaration as written in Verilog: direction and width (`None` when the range
/// uses a parameter that is not known).
type Decl = (PortDir, Option<u32>);

/// Evaluates `a-1`, `A/8-1`, `511` with the integer parameters `params` (left to right for
/// `+ -`, `* /` first).
fn eval(expr: &str, params: &BTreeMap<String, i64>) -> Option<i64> {
    let mut terms: Vec<(char, i64)> = Vec::new();
    let mut op = '+';
    let mut prod: Option<i64> = None;
    let mut mul = '*';
    let mut rest = expr.trim();
    while !rest.is_empty() {
        let tok_end = rest
            .find(|c: char| "+-*/".contains(c))
            .unwrap_or(rest.len());
        let tok = rest[..tok_end].trim();
        let v = match tok.parse::<i64>() {
            Ok(v) => v,
            Err(_) => *params.get(tok)?,
        };
        prod = Some(match (prod, mul) {
            (None, _) => v,
            (Some(p), '*') => p * v,
            (Some(p), _) => p / v,
        });
        let Some(c) = rest[tok_end..].chars().next() else {
            break;
        };
        rest = &rest[tok_end + 1..];
        if c == '*' || c == '/' {
            mul = c;
        } else {
            terms.push((op, prod.take()?));
            op = c;
            mul = '*';
        }
    }
    terms.push((op, prod?));
    Some(
        terms
            .iter()
            .map(|&(o, v)| if o == '-' { -v } else { v })
            .sum(),
    )
}

/// The port declarations of module `name` in `text` (ANSI or non-ANSI style, one per line).
fn module_ports(text: &str, name: &str) -> BTreeMap<String, Decl> {
    let head = format!("module {name}");
    let at = text
        .match_indices(&head)
        .map(|(i, _)| i)
        .find(|&i| {
            let c = text[i + head.len()..].chars().next();
            matches!(c, Some('(' | ' ' | '#' | '\n'))
        })
        .unwrap_or_else(|| panic!("no module {name}"));
    let body = &text[at..];
    let body = &body[..body.find("endmodule").expect("endmodule")];
    let mut params = BTreeMap::new();
    let mut ports = BTreeMap::new();
    for line in body.lines() {
        let line = line.split("//").next().unwrap().trim();
        let line = line.trim_end_matches([',', ';', ')']).trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"parameter") {
            if let Some((l, r)) = line.split_once('=') {
                let n = l.split_whitespace().last().unwrap().to_string();
                if let Some(v) = eval(r, &params) {
                    params.insert(n, v);
                }
            }
            continue;
        }
        let dir = match words.first() {
            Some(&"input") => PortDir::Input,
            Some(&"output") => PortDir::Output,
            _ => continue,
        };
        let pname = words.last().unwrap().to_string();
        let width = match (line.find('['), line.find(']')) {
            (Some(a), Some(b)) => {
                let (msb, lsb) = line[a + 1..b].split_once(':').expect("a [msb:lsb] range");
                eval(msb, &params)
                    .zip(eval(lsb, &params))
                    .map(|(m, l)| (m - l + 1) as u32)
            }
            _ => Some(1),
        };
        ports.insert(pname, (dir, width));
    }
    ports
}

fn table() -> BTreeMap<String, Decl> {
    TOP_PORTS
        .iter()
        .map(|p| (p.name.to_string(), (p.dir, Some(p.width))))
        .collect()
}

#[test]
fn the_generated_engine_top_has_exactly_the_table_ports_in_order() {
    let v = rocenic_sim::rtl_device::engine_verilog();
    let ports = module_ports(v, "top");
    assert_eq!(ports, table(), "engine `top` vs TOP_PORTS");
    // Same order as the table (the port list of `module top(...)`).
    let head = &v[v.find("module top(").unwrap() + "module top(".len()..];
    let list: Vec<&str> = head[..head.find(')').unwrap()]
        .split(',')
        .map(str::trim)
        .collect();
    let names: Vec<&str> = TOP_PORTS.iter().map(|p| p.name).collect();
    assert_eq!(list, names);
}

#[test]
fn the_contract_design_has_exactly_the_table_ports() {
    let v = read("sim/tests/rtl/contract_top.v");
    assert_eq!(module_ports(&v, "top"), table());
}

#[test]
fn the_board_wrapper_connects_every_table_port_of_the_engine() {
    let v = read("firmware/u55c/rtl/rocenic_u55c.sv");
    let at = v
        .find("top engine (")
        .expect("an instance `top engine (` in the wrapper");
    let inst: String = v[at..at + v[at..].find(");").unwrap()]
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect();
    let mut got = BTreeSet::new();
    for part in inst.split('.').skip(1) {
        let name = part.split('(').next().unwrap().trim();
        assert!(got.insert(name.to_string()), "{name} connected twice");
    }
    let want: BTreeSet<String> = TOP_PORTS.iter().map(|p| p.name.to_string()).collect();
    assert_eq!(got, want);
}

#[test]
fn the_xdma_adapter_mirrors_the_table_dma_ports() {
    let v = read("firmware/common/rtl/rocenic_xdma_dma.sv");
    let ports = module_ports(&v, "rocenic_xdma_dma");
    let dma: Vec<_> = TOP_PORTS
        .iter()
        .filter(|p| p.name.starts_with("dma_"))
        .collect();
    assert!(dma.len() > 10);
    for p in dma {
        let flipped = match p.dir {
            PortDir::Input => PortDir::Output,
            _ => PortDir::Input,
        };
        assert_eq!(
            ports.get(p.name),
            Some(&(flipped, Some(p.width))),
            "{} in rocenic_xdma_dma",
            p.name
        );
    }
    // No other engine-facing DMA port.
    let extra: Vec<_> = ports
        .keys()
        .filter(|n| n.starts_with("dma_") && !TOP_PORTS.iter().any(|p| &p.name == n))
        .collect();
    assert!(extra.is_empty(), "{extra:?}");
}

#[test]
fn the_port_reader_understands_parameters() {
    let v = "module m #(\n  parameter int W = 512,\n  parameter int K = W/8 // bytes\n) (\n  input logic [W-1:0] a,\n  output logic [K-1:0] b,\n  input logic c,\n  output wire [Q-1:0] d\n);\nendmodule\n";
    let p = module_ports(v, "m");
    assert_eq!(p["a"], (PortDir::Input, Some(512)));
    assert_eq!(p["b"], (PortDir::Output, Some(64)));
    assert_eq!(p["c"], (PortDir::Input, Some(1)));
    assert_eq!(p["d"], (PortDir::Output, None));
}
