//! Hardware quality gates on generated Verilog: Verilator lint, yosys structural checks
//! (no latches, no undriven signals) and yosys `synth_xilinx` with its LUT/FF/BRAM figures.
//!
//! Each gate writes the design as `top.v` into a directory it is given (the file name
//! matches the top module, as Verilator's DECLFILENAME rule wants), runs the tool there and
//! keeps its log beside it. A missing tool is an error that says how to install it: the
//! gates never skip.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to get the tools on Debian 12.
pub const INSTALL_HINT: &str =
    "install with `bash scripts/install-deps.sh rtl` (or `apt-get install -y verilator yosys`)";

/// Verilator warnings switched off for the lint gate, each with its reason. Everything else
/// in `-Wall` must be clean.
pub const VERILATOR_WAIVERS: &[(&str, &str)] = &[(
    "DECLFILENAME",
    "RustHDL writes all modules of a design into one file, so only `top` can match its name",
)];

/// Why a gate failed.
#[derive(Debug)]
pub enum GateError {
    /// The tool is not installed (or does not run).
    ToolMissing { tool: &'static str },
    /// The tool ran and rejected the design; `log` is its output.
    Failed {
        gate: &'static str,
        reason: String,
        log: String,
    },
    /// Writing the design or the log failed.
    Io(std::io::Error),
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateError::ToolMissing { tool } => write!(f, "{tool} not found: {INSTALL_HINT}"),
            GateError::Failed { gate, reason, log } => {
                write!(f, "{gate} failed: {reason}\n--- log ---\n{log}")
            }
            GateError::Io(e) => write!(f, "gate i/o: {e}"),
        }
    }
}

impl std::error::Error for GateError {}

impl From<std::io::Error> for GateError {
    fn from(e: std::io::Error) -> Self {
        GateError::Io(e)
    }
}

/// Writes `verilog` as `dir/top.v` (creating `dir`) and returns the path.
pub fn write_top(verilog: &str, dir: &Path) -> Result<PathBuf, GateError> {
    fs::create_dir_all(dir)?;
    let path = dir.join("top.v");
    fs::write(&path, verilog)?;
    Ok(path)
}

/// Runs `tool args` in `dir`; returns its combined output and whether it succeeded.
fn run(tool: &'static str, args: &[&str], dir: &Path) -> Result<(bool, String), GateError> {
    let output = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GateError::ToolMissing { tool },
            _ => GateError::Io(e),
        })?;
    let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stderr));
    fs::write(dir.join(format!("{tool}.log")), &log)?;
    Ok((output.status.success(), log))
}

/// `verilator --lint-only -Wall` on the design, with [`VERILATOR_WAIVERS`] only. Returns the
/// log on success.
pub fn verilator_lint(verilog: &str, dir: &Path) -> Result<String, GateError> {
    write_top(verilog, dir)?;
    let waivers: Vec<String> = VERILATOR_WAIVERS
        .iter()
        .map(|(w, _)| format!("-Wno-{w}"))
        .collect();
    let mut args = vec!["--lint-only", "-Wall", "--top-module", "top"];
    args.extend(waivers.iter().map(String::as_str));
    args.push("top.v");
    let (ok, log) = run("verilator", &args, dir)?;
    if !ok || log.contains("%Warning") || log.contains("%Error") {
        return Err(GateError::Failed {
            gate: "verilator --lint-only -Wall",
            reason: "warnings or errors".into(),
            log,
        });
    }
    Ok(log)
}

/// The Verilator flags the simulator builds the engine with (`sim`'s Verilator build), so
/// [`verilator_verilate`] sees the same ordering as the simulated model.
pub const VERILATE_FLAGS: &[&str] = &["--cc", "-O3", "--x-assign", "fast", "--x-initial", "fast"];

/// The signals of each `%Warning-UNOPTFLAT` line of a Verilator log (`top.rdr$s_job_ready`),
/// in log order.
pub fn unoptflat_signals(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.starts_with("%Warning-UNOPTFLAT"))
        .map(|l| {
            let quoted = l.rsplit_once(": ").map_or(l, |(_, tail)| tail);
            quoted.trim().trim_matches('\'').to_owned()
        })
        .collect()
}

/// Verilates the design to C++ (`verilator` with [`VERILATE_FLAGS`], `-Wall` and
/// [`VERILATOR_WAIVERS`], into `dir/obj`; no C++ compile) and fails on any warning or
/// error. This is the gate for what `--lint-only` cannot see: Verilator orders the logic
/// only when it verilates, so circular combinational logic between blocks (UNOPTFLAT:
/// RustHDL writes a block as one `always`, which Verilator may keep whole, and then every
/// output of the block reads every input) shows up here alone; the reason names those
/// signals. Returns the log on success.
pub fn verilator_verilate(verilog: &str, dir: &Path) -> Result<String, GateError> {
    write_top(verilog, dir)?;
    let waivers: Vec<String> = VERILATOR_WAIVERS
        .iter()
        .map(|(w, _)| format!("-Wno-{w}"))
        .collect();
    let mut args: Vec<&str> = VERILATE_FLAGS.to_vec();
    args.extend(["-Wall", "--top-module", "top", "-Mdir", "obj"]);
    args.extend(waivers.iter().map(String::as_str));
    args.push("top.v");
    let (ok, log) = run("verilator", &args, dir)?;
    let loops = unoptflat_signals(&log);
    if !loops.is_empty() {
        return Err(GateError::Failed {
            gate: "verilator --cc -Wall",
            reason: format!(
                "{} UNOPTFLAT (circular combinational logic) on {}",
                loops.len(),
                loops.join(", ")
            ),
            log,
        });
    }
    if !ok || log.contains("%Warning") || log.contains("%Error") {
        return Err(GateError::Failed {
            gate: "verilator --cc -Wall",
            reason: "warnings or errors".into(),
            log,
        });
    }
    Ok(log)
}

/// yosys structural checks: the hierarchy resolves, `proc` infers no latch, and `check`
/// finds no undriven or multiply driven signal and no combinational loop. The log ends with
/// `stat -width` of the flattened design ([`Structure::parse`] reads it).
pub fn yosys_check(verilog: &str, dir: &Path) -> Result<String, GateError> {
    write_top(verilog, dir)?;
    let script = "read_verilog top.v; hierarchy -check -top top; proc; flatten; opt_clean; \
                  check -assert; \
                  select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$sr t:$_DLATCH_*; \
                  stat -width";
    let (ok, log) = run("yosys", &["-p", script], dir)?;
    let latch = log
        .lines()
        .find(|l| l.contains("Latch inferred"))
        .map(str::to_owned);
    if !ok || latch.is_some() {
        return Err(GateError::Failed {
            gate: "yosys check",
            reason: latch.unwrap_or_else(|| "check or latch assertion failed".into()),
            log,
        });
    }
    Ok(log)
}

/// Storage of a design as yosys' front end sees it ([`yosys_check`]: `proc; flatten;
/// opt_clean`, before any optimisation or technology mapping): bits in flip-flop cells and
/// bits in memories. Not utilization (synthesis later removes constant and unused
/// registers, and maps memories to block RAM, LUT RAM or flip-flops), but cheap, and it
/// shows where state lives: a per-QP table held in registers would show up in
/// `register_bits`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Structure {
    /// Sum of the widths of the flip-flop cells (`$dff`, `$adff`, `$sdff`, `$dffe`...).
    pub register_bits: u64,
    /// yosys' "Number of memories".
    pub memories: u64,
    /// yosys' "Number of memory bits" (width times depth, summed over the memories).
    pub memory_bits: u64,
}

impl Structure {
    /// Parses the last statistics section of a log that ends with `stat -width`.
    pub fn parse(log: &str) -> Option<Structure> {
        let section = &log[log.rfind("Printing statistics")?..];
        let mut s = Structure::default();
        let (mut memories, mut memory_bits) = (None, None);
        for line in section.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("Number of memories:") {
                memories = n.trim().parse().ok();
            } else if let Some(n) = line.strip_prefix("Number of memory bits:") {
                memory_bits = n.trim().parse().ok();
            } else if let Some((cell, count)) = line.split_once(char::is_whitespace) {
                // `$dffe_32    7`: seven 32-bit cells.
                let Some((kind, width)) = cell.rsplit_once('_') else {
                    continue;
                };
                if kind.starts_with('$') && kind.contains("dff") {
                    let width: u64 = width.parse().ok()?;
                    let count: u64 = count.trim().parse().ok()?;
                    s.register_bits += width * count;
                }
            }
        }
        s.memories = memories?;
        s.memory_bits = memory_bits?;
        Some(s)
    }
}

impl fmt::Display for Structure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} register bits, {} memories of {} bits",
            self.register_bits, self.memories, self.memory_bits
        )
    }
}

/// Cell counts of a `synth_xilinx` run (7-series primitives, yosys' default family).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SynthStats {
    /// LUT1..LUT6.
    pub luts: u64,
    /// FDRE, FDSE, FDCE, FDPE.
    pub ffs: u64,
    /// RAMB36E1.
    pub bram36: u64,
    /// RAMB18E1.
    pub bram18: u64,
    /// DSP48E1.
    pub dsps: u64,
    /// LUTs used as distributed RAM or shift registers (RAM*M*, SRL*).
    pub lutram: u64,
    /// CARRY4.
    pub carry: u64,
    /// MUXF7 and MUXF8.
    pub muxf: u64,
    /// yosys' "Estimated number of LCs".
    pub estimated_lcs: u64,
}

impl SynthStats {
    /// Block RAM in RAMB36 equivalents (two RAMB18 make one).
    pub fn bram36_equivalent(&self) -> f64 {
        self.bram36 as f64 + self.bram18 as f64 / 2.0
    }

    /// Parses the last statistics section of a yosys log (the `stat -tech xilinx` one).
    pub fn parse(log: &str) -> Option<SynthStats> {
        let section = &log[log.rfind("Printing statistics")?..];
        let mut s = SynthStats::default();
        let mut any = false;
        for line in section.lines() {
            let mut parts = line.split_whitespace();
            let (Some(name), Some(count), None) = (parts.next(), parts.next(), parts.next()) else {
                if let Some(rest) = line.trim().strip_prefix("Estimated number of LCs:") {
                    s.estimated_lcs = rest.trim().parse().ok()?;
                }
                continue;
            };
            let Ok(count) = count.parse::<u64>() else {
                continue;
            };
            any = true;
            match name {
                "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6" => s.luts += count,
                "FDRE" | "FDSE" | "FDCE" | "FDPE" => s.ffs += count,
                "RAMB36E1" => s.bram36 += count,
                "RAMB18E1" => s.bram18 += count,
                "DSP48E1" => s.dsps += count,
                "CARRY4" => s.carry += count,
                "MUXF7" | "MUXF8" => s.muxf += count,
                n if n.starts_with("RAM") || n.starts_with("SRL") => s.lutram += count,
                _ => {}
            }
        }
        any.then_some(s)
    }
}

impl fmt::Display for SynthStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LUT {} FF {} BRAM36 {} (RAMB36 {}, RAMB18 {}) DSP {} LUTRAM/SRL {} CARRY4 {} MUXF {} (est. LCs {})",
            self.luts,
            self.ffs,
            self.bram36_equivalent(),
            self.bram36,
            self.bram18,
            self.dsps,
            self.lutram,
            self.carry,
            self.muxf,
            self.estimated_lcs
        )
    }
}

/// The yosys script of [`yosys_synth`]: yosys' own `synth_xilinx` flow, 7-series cells.
pub const SYNTH_SCRIPT: &str =
    "read_verilog top.v; synth_xilinx -noiopad -flatten -top top; stat -tech xilinx";

/// `yosys -p "read_verilog top.v; synth_xilinx -noiopad -flatten -top top; stat -tech
/// xilinx"` ([`SYNTH_SCRIPT`]) and its figures.
pub fn yosys_synth(verilog: &str, dir: &Path) -> Result<SynthStats, GateError> {
    yosys_synth_script(verilog, dir, SYNTH_SCRIPT)
}

/// Runs a yosys synthesis `script` (which reads `top.v` and ends with `stat -tech xilinx`)
/// on the design and returns the figures of its last statistics section.
pub fn yosys_synth_script(
    verilog: &str,
    dir: &Path,
    script: &str,
) -> Result<SynthStats, GateError> {
    write_top(verilog, dir)?;
    let (ok, log) = run("yosys", &["-p", script], dir)?;
    if !ok {
        return Err(GateError::Failed {
            gate: "yosys synth_xilinx",
            reason: "yosys exited with an error".into(),
            log,
        });
    }
    SynthStats::parse(&log).ok_or_else(|| GateError::Failed {
        gate: "yosys synth_xilinx",
        reason: "no statistics in the log".into(),
        log,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_signals_of_unoptflat_warnings() {
        let log = "\
%Warning-UNOPTFLAT: top.v:568:11: Signal unoptimizable: Circular combinational logic: 'top.rdr$s_job_ready'
  568 |     wire  rdr$s_job_ready;
                    top.v:756:11:      Example path: top.js_read$m_valid
%Warning-WIDTH: top.v:9:3: Operator ASSIGN expects 1 bits
%Warning-UNOPTFLAT: top.v:768:11: Signal unoptimizable: Circular combinational logic: 'top.js_rep$m_valid'
";
        assert_eq!(
            unoptflat_signals(log),
            ["top.rdr$s_job_ready", "top.js_rep$m_valid"]
        );
        assert!(unoptflat_signals("%Warning-WIDTH: top.v:1:1: x\n").is_empty());
    }

    #[test]
    fn parses_the_last_statistics_section() {
        let log = "\
3. Printing statistics.
   Number of cells:                 9
     LUT2                            9
2.50. Executing CHECK pass
3. Printing statistics.

=== top ===

   Number of wires:                196
   Number of cells:                863
     BUFG                            1
     CARRY4                          4
     FDRE                           16
     FDSE                            1
     LUT2                          526
     LUT6                          118
     MUXF7                          65
     RAMB18E1                        3
     RAMB36E1                        2
     SRL16E                          5

   Estimated number of LCs:        452
";
        let s = SynthStats::parse(log).expect("stats");
        assert_eq!(s.luts, 644);
        assert_eq!(s.ffs, 17);
        assert_eq!(s.carry, 4);
        assert_eq!(s.muxf, 65);
        assert_eq!((s.bram36, s.bram18), (2, 3));
        assert_eq!(s.bram36_equivalent(), 3.5);
        assert_eq!(s.lutram, 5);
        assert_eq!(s.estimated_lcs, 452);
    }

    #[test]
    fn sums_register_widths_and_reads_memory_bits() {
        let log = "\
7. Printing statistics.

=== top ===

   Number of wires:                  7
   Number of memories:               2
   Number of memory bits:         1536
   Number of processes:              0
   Number of cells:                  6
     $adff_1                         1
     $and_8                          1
     $dff_8                          2
     $dffe_32                        1
     $memrd_v2_16                    1
     $sdff_3                         1
";
        let s = Structure::parse(log).expect("structure");
        assert_eq!(s.register_bits, 1 + 16 + 32 + 3);
        assert_eq!((s.memories, s.memory_bits), (2, 1536));
        assert_eq!(Structure::parse("no statistics"), None);
    }
}
