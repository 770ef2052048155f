//! `rocenic-hdl`: writes the generated Verilog of the current top.
//!
//! ```text
//! rocenic-hdl --out DIR [--top NAME] [--config default|large] [--synth]
//! ```
//!
//! Writes `DIR/top.v` (module `top`) and prints its path. `--top` picks the design (default:
//! the first listed by `--list`); `--config` the size of the engine top (256 QPs / 1024 MRs
//! or 1024 / 16384; the engine only); `--synth` also runs yosys `synth_xilinx` on it and
//! prints the LUT/FF/BRAM figures.

use std::path::PathBuf;
use std::process::ExitCode;

use rocenic_hdl::{gates, Design, EngineConfig};

const USAGE: &str =
    "usage: rocenic-hdl --out DIR [--top NAME] [--config default|large] [--synth] | --list";

struct Args {
    out: PathBuf,
    design: Design,
    config: EngineConfig,
    synth: bool,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut out = None;
    let mut design = Design::ALL[0];
    let mut config = None;
    let mut synth = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = Some(PathBuf::from(args.next().ok_or("--out needs a directory")?)),
            "--top" => {
                let name = args.next().ok_or("--top needs a design name")?;
                design = Design::from_name(&name).ok_or_else(|| {
                    let names: Vec<_> = Design::ALL.iter().map(|d| d.name()).collect();
                    format!("unknown design {name:?} (known: {})", names.join(", "))
                })?;
            }
            "--config" => {
                let name = args
                    .next()
                    .ok_or("--config needs a name (default or large)")?;
                config = Some(EngineConfig::from_name(&name).ok_or_else(|| {
                    format!("unknown configuration {name:?} (known: default, large)")
                })?);
            }
            "--synth" => synth = true,
            "--list" => {
                for d in Design::ALL {
                    println!("{}", d.name());
                }
                return Ok(None);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    let out = out.ok_or("--out DIR is required")?;
    if config.is_some() && design != Design::Engine {
        return Err(format!(
            "--config sizes the engine top only, not {:?}",
            design.name()
        ));
    }
    let config = config.unwrap_or(EngineConfig::Default);
    Ok(Some(Args {
        out,
        design,
        config,
        synth,
    }))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(args)) => args,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocenic-hdl: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let verilog = match args.design {
        Design::Engine => args.config.engine_verilog(),
        other => other.verilog(),
    };
    let path = match gates::write_top(&verilog, &args.out) {
        Ok(path) => path,
        Err(e) => {
            eprintln!("rocenic-hdl: writing {}: {e}", args.out.display());
            return ExitCode::FAILURE;
        }
    };
    println!("{}", path.display());
    if args.synth {
        let dir = args.out.join("synth");
        match gates::yosys_synth(&verilog, &dir) {
            Ok(stats) if args.design == Design::Engine => println!(
                "{} {} (yosys synth_xilinx): {stats}",
                args.design.name(),
                args.config.name()
            ),
            Ok(stats) => println!("{} (yosys synth_xilinx): {stats}", args.design.name()),
            Err(e) => {
                eprintln!("rocenic-hdl: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
