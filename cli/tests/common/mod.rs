//! Helpers shared by the CLI's integration tests (`mod common;` in each).

use clap::Parser;
use rocenic_cli::{run, Cli};

/// Runs `rocenic ARGS` in this process; returns what it printed.
pub fn rocenic(args: &[&str]) -> anyhow::Result<String> {
    let cli = Cli::try_parse_from(std::iter::once("rocenic").chain(args.iter().copied()))?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out)?)
}

/// A path named `name` in this test process's own temporary directory.
pub fn tmp(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let test = exe
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("test")
        .to_string();
    let dir = std::env::temp_dir().join(format!("rocenic-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}
