//! `latency.svg`: what a reader looks at instead of reading the table.

use std::fmt::Write as _;

use crate::blocklag;
use crate::measure::quantile;
use crate::scenarios::Outcome;

const PANEL_W: f64 = 600.0;
const PANEL_H: f64 = 250.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 34.0;
const COLORS: [&str; 5] = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"];

/// A panel's title and its series: a name and sorted latencies in nanoseconds.
type Panel<'a> = (String, Vec<(String, &'a [u64])>);

/// Latency CDFs, one panel per scenario and concurrency (log time axis), plus the
/// distribution of blocklag `check()` durations.
pub(crate) fn svg(outcomes: &[Outcome], blocklag: Option<&blocklag::Outcome>) -> String {
    let mut panels: Vec<Panel<'_>> = outcomes
        .iter()
        .map(|o| {
            let title = format!("{}, concurrency {}", o.scenario, o.rows[0].concurrency);
            (title, o.rows.iter().map(|r| (r.variant.to_owned(), r.latencies.as_slice())).collect())
        })
        .collect();
    if let Some(b) = blocklag {
        let series = b.checks.iter().map(|c| {
            let plural = if c.providers == 1 { "" } else { "s" };
            (format!("{} provider{plural}", c.providers), c.durations.as_slice())
        });
        panels.push(("blocklag check(), probes answer after 20 ms".into(), series.collect()));
    }
    let rows = panels.len().div_ceil(2);
    let (w, h) = (2.0 * PANEL_W, rows as f64 * PANEL_H + 40.0);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"12\" y=\"24\" font-size=\"15\">failnext bench: latency distribution (CDF) per \
         variant; dot = p50, ring = p99</text>\n"
    );
    for (i, (title, series)) in panels.iter().enumerate() {
        let (x0, y0) = ((i % 2) as f64 * PANEL_W, 40.0 + (i / 2) as f64 * PANEL_H);
        panel(&mut svg, x0, y0, title, series);
    }
    svg.push_str("</svg>\n");
    svg
}

fn panel(svg: &mut String, x0: f64, y0: f64, title: &str, series: &[(String, &[u64])]) {
    let nonempty = || series.iter().filter(|s| !s.1.is_empty());
    let lo = nonempty().map(|s| quantile(s.1, 0.001)).fold(f64::INFINITY, f64::min).max(1.0);
    let hi = nonempty().map(|s| quantile(s.1, 0.999)).fold(0.0, f64::max).max(lo * 1.5);
    let (lo, hi) = (lo / 1.1, hi * 1.1);
    let (px0, px1) = (x0 + LEFT, x0 + PANEL_W - RIGHT);
    let (py0, py1) = (y0 + TOP, y0 + PANEL_H - BOTTOM);
    let x = |ns: f64| px0 + (ns.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) * (px1 - px0);
    let y = |q: f64| py1 - q * (py1 - py0);
    let _ = writeln!(svg, "<text x=\"{}\" y=\"{}\" font-size=\"13\">{title}</text>", px0, y0 + 18.0);
    let _ = writeln!(
        svg,
        "<rect x=\"{px0}\" y=\"{py0}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        px1 - px0,
        py1 - py0
    );
    for q in [0.25, 0.5, 0.75, 0.99] {
        let _ = writeln!(
            svg,
            "<line x1=\"{px0}\" x2=\"{px1}\" y1=\"{0:.1}\" y2=\"{0:.1}\" stroke=\"#eee\"/>\
             <text x=\"{1}\" y=\"{2:.1}\" text-anchor=\"end\">p{3}</text>",
            y(q),
            px0 - 4.0,
            y(q) + 4.0,
            (q * 100.0) as u32
        );
    }
    let mut last_label = f64::NEG_INFINITY;
    for tick in ticks(lo, hi) {
        let tx = x(tick);
        // Labels closer than 40 px would overlap: keep the earlier one.
        if tx - last_label < 40.0 {
            continue;
        }
        last_label = tx;
        let _ = writeln!(
            svg,
            "<line x1=\"{tx:.1}\" x2=\"{tx:.1}\" y1=\"{py0}\" y2=\"{py1}\" stroke=\"#eee\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            py1 + 14.0,
            duration_label(tick)
        );
    }
    for (k, (name, lat)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let ly = py0 + 14.0 * k as f64 + 8.0;
        let _ = writeln!(
            svg,
            "<rect x=\"{}\" y=\"{:.1}\" width=\"12\" height=\"4\" fill=\"{color}\"/>\
             <text x=\"{}\" y=\"{:.1}\">{name}</text>",
            px1 + 10.0,
            ly - 4.0,
            px1 + 26.0,
            ly + 1.0
        );
        if lat.is_empty() {
            continue;
        }
        let points: Vec<String> = (0..=200)
            .map(|j| {
                let q = 0.001 + 0.998 * f64::from(j) / 200.0;
                format!("{:.1},{:.1}", x(quantile(lat, q)), y(q))
            })
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.6\" points=\"{}\"/>",
            points.join(" ")
        );
        let _ = writeln!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"/>\
             <circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"none\" stroke=\"{color}\"/>",
            x(quantile(lat, 0.5)),
            y(0.5),
            x(quantile(lat, 0.99)),
            y(0.99)
        );
    }
}

/// 1-2-5 ticks between `lo` and `hi` nanoseconds (1..9 on a narrow axis, decades on a wide one).
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let within = |mantissas: &[f64]| {
        let mut all = Vec::new();
        let mut decade = 10f64.powf(lo.log10().floor());
        while decade <= hi {
            all.extend(mantissas.iter().map(|m| m * decade).filter(|t| (lo..=hi).contains(t)));
            decade *= 10.0;
        }
        all
    };
    match within(&[1.0, 2.0, 5.0]) {
        few if few.len() < 3 => within(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        many if many.len() > 8 => within(&[1.0]),
        ok => ok,
    }
}

fn duration_label(ns: f64) -> String {
    match ns {
        n if n >= 1e9 => format!("{}s", n / 1e9),
        n if n >= 1e6 => format!("{}ms", n / 1e6),
        n if n >= 1e3 => format!("{}µs", n / 1e3),
        n => format!("{n}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_1_2_5_or_finer_on_a_narrow_axis() {
        assert_eq!(ticks(15_000.0, 300_000.0), [20_000.0, 50_000.0, 100_000.0, 200_000.0]);
        assert_eq!(ticks(19_000.0, 40_000.0), [20_000.0, 30_000.0, 40_000.0]);
        assert_eq!(duration_label(20_000.0), "20µs");
        assert_eq!(duration_label(50_000_000.0), "50ms");
    }
}
