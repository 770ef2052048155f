//! `rocenic perf -a` with `--plot`, and `rocenic stats`, in process on the model backend.

mod common;
use common::{rocenic, tmp};

const SWEEP: &[&str] = &["perf", "write", "-a", "--max-size", "64", "-n", "4"];

#[test]
fn a_sweep_prints_a_row_per_size_and_draws_png_and_svg() {
    let png = tmp("sweep.png");
    let args: Vec<&str> = SWEEP
        .iter()
        .copied()
        .chain(["--plot", png.to_str().unwrap()])
        .collect();
    let text = rocenic(&args).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<u32>().is_ok())
        })
        .collect();
    let sizes: Vec<&str> = rows
        .iter()
        .map(|r| r.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(sizes, ["2", "4", "8", "16", "32", "64"], "{text}");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((w, h), rocenic_cli::plot::SIZE);

    let svg = tmp("sweep.svg");
    let args: Vec<&str> = SWEEP
        .iter()
        .copied()
        .chain(["--json", "--plot", svg.to_str().unwrap()])
        .collect();
    let text = rocenic(&args).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sizes: Vec<u64> = records
        .iter()
        .map(|r| r["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [2, 4, 8, 16, 32, 64]);
    assert!(records
        .iter()
        .all(|r| r["verified"] == true && r["messages"] == 4));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{svg:.200}"
    );
    assert!(svg.contains("Gb/s at 250 MHz") && svg.contains("64 B"));
}

#[test]
fn bad_plot_and_sweep_arguments_are_refused() {
    let e = rocenic(&[SWEEP, &["--plot", "out.gif"]].concat()).unwrap_err();
    assert!(e.to_string().contains("must end in .png or .svg"), "{e}");
    let e = rocenic(&["perf", "write", "-n", "4", "--plot", "a.png"]).unwrap_err();
    assert!(e.to_string().contains("add -a"), "{e}");
    let e = rocenic(&["perf", "write", "-a", "--max-size", "48"]).unwrap_err();
    assert!(e.to_string().contains("power of two"), "{e}");
    let e = rocenic(&["perf", "atomic", "-a"]).unwrap_err();
    assert!(e.to_string().contains("always 8 bytes"), "{e}");
}

#[test]
fn demo_stats_prints_counters_like_rdma_statistic_show() {
    let text = rocenic(&["demo", "--stats", "--max-size", "256", "--mtu", "256"]).unwrap();
    let field = |line: &str, name: &str| -> u64 {
        let w: Vec<&str> = line.split_whitespace().collect();
        let i = w.iter().position(|&x| x == name).unwrap();
        w[i + 1].parse().unwrap()
    };
    let link = |dev: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("link {dev}/1 tx_frames")))
            .unwrap_or_else(|| panic!("no {dev} line in {text}"))
    };
    let (a, b) = (link("rocenic0"), link("rocenic1"));
    assert!(field(a, "tx_frames") > 0);
    // A lossless cable: what one NIC sent the other received.
    assert_eq!(field(a, "tx_frames"), field(b, "rx_frames"));
    assert_eq!(field(b, "tx_bytes"), field(a, "rx_bytes"));
    assert_eq!(field(a, "retransmits"), 0);
    assert_eq!(text.lines().filter(|l| l.contains("/1 cntn ")).count(), 2);
}
