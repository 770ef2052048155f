//! The `rocenic` command: see `rocenic --help`.

use std::process::ExitCode;

use clap::Parser;
use rocenic_cli::{run, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    match run(cli, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocenic: {e:#}");
            ExitCode::FAILURE
        }
    }
}
