//! `rocenic perf -a --plot FILE`: bandwidth and message rate against message size.
//!
//! Drawn with plotters' pure-Rust backends (PNG through the `image` crate, SVG as text):
//! no fontconfig or freetype. Text is rendered by `ab_glyph` from a TrueType file read at
//! run time, DejaVu Sans from Debian's `fonts-dejavu-core` ([`FONT_PATHS`]; installed by
//! `scripts/install-deps.sh plot`); without it the command fails naming that package.

use std::path::Path;

use anyhow::bail;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::perf::PerfResult;

/// Where the font is looked for, first found wins (`ROCENIC_PLOT_FONT` before these).
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Width and height of the picture, in pixels.
pub const SIZE: (u32, u32) = (1000, 700);

/// The picture formats `--plot` writes, by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Svg,
}

impl Format {
    /// The format named by `path`'s extension (`.png` or `.svg`, any case).
    pub fn from_path(path: &Path) -> anyhow::Result<Format> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("png") => Ok(Format::Png),
            Some("svg") => Ok(Format::Svg),
            _ => bail!(
                "--plot {}: the file name must end in .png or .svg",
                path.display()
            ),
        }
    }
}

/// Loads the font once per process and registers it as plotters' "sans-serif".
fn load_font() -> anyhow::Result<()> {
    use std::sync::OnceLock;
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let from_env = std::env::var_os("ROCENIC_PLOT_FONT").map(std::path::PathBuf::from);
        let candidates = from_env
            .into_iter()
            .chain(FONT_PATHS.iter().map(Into::into));
        for p in candidates {
            if let Ok(bytes) = std::fs::read(&p) {
                // plotters keeps the font for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                    .map_err(|_| format!("{} is not a TrueType font", p.display()));
            }
        }
        Err(format!(
            "no font to draw the plot's text: install Debian's fonts-dejavu-core \
             (`bash scripts/install-deps.sh plot`, or `apt-get install fonts-dejavu-core`), \
             or point ROCENIC_PLOT_FONT at a .ttf file (looked in {})",
            FONT_PATHS.join(", ")
        ))
    })
    .clone()
    .map_err(anyhow::Error::msg)
}

/// "4 KiB" for 4096, "2 B" for 2.
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// Draws `results` (one run per message size, sizes ascending) into `path`: bandwidth
/// (Gb/s at 250 MHz) above, message rate (million messages per second at 250 MHz) below,
/// both against the size on a log-2 axis.
pub fn plot(results: &[PerfResult], path: &Path) -> anyhow::Result<()> {
    let format = Format::from_path(path)?;
    if results.is_empty() {
        bail!("--plot: no results to draw");
    }
    load_font()?;
    match format {
        Format::Png => draw(results, BitMapBackend::new(path, SIZE).into_drawing_area()),
        Format::Svg => draw(results, SVGBackend::new(path, SIZE).into_drawing_area()),
    }
}

/// What a panel draws of one run.
type Metric = fn(&PerfResult) -> f64;

fn draw<DB: DrawingBackend>(
    results: &[PerfResult],
    root: DrawingArea<DB, Shift>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("drawing the plot: {e}");
    root.fill(&WHITE).map_err(err)?;
    let first = &results[0];
    let title = format!(
        "rocenic perf {} -a: backend {}, {} QP(s), PMTU {}, {} messages per QP",
        serde_json::to_value(first.op)?.as_str().unwrap_or("?"),
        first.backend,
        first.qps,
        first.mtu,
        first.iters
    );
    let root = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
    let (top, bottom) = root.split_vertically(SIZE.1 / 2 - 20);
    let log2 = |s: u32| (s.max(1) as f64).log2();
    let x0 = log2(results[0].size).floor();
    let x1 = log2(results[results.len() - 1].size).ceil().max(x0 + 1.0);
    let panels: [(&DrawingArea<DB, Shift>, &str, Metric, RGBColor); 2] = [
        (&top, "Gb/s at 250 MHz", |r| r.gbps_at_250mhz, BLUE),
        (
            &bottom,
            "Mmsg/s at 250 MHz",
            |r| r.messages_per_cycle * 250.0,
            RED,
        ),
    ];
    for (area, label, value, color) in panels {
        let ymax = results.iter().map(value).fold(0.0, f64::max) * 1.1;
        let ymax = if ymax > 0.0 { ymax } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .margin_right(40)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0.0..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("message size (log2 scale)")
            .y_desc(label)
            .x_labels((x1 - x0) as usize + 1)
            .x_label_formatter(&|x| size_label(2f64.powf(x.round()) as u64))
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        let points: Vec<(f64, f64)> = results.iter().map(|r| (log2(r.size), value(r))).collect();
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?;
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
