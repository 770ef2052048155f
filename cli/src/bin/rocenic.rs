//! The `rocenic` command: see `rocenic --help`.

use std::process::ExitCode;

use clap::Parser;
use rocenic_cli::{run, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    rocenic_cli::progress::init_logging(cli.verbose);
    rocenic_cli::progress::enable();
    let mut out = std::io::stdout().lock();
    match run(cli, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rocenic: {e:#}");
            ExitCode::FAILURE
        }
    }
}
