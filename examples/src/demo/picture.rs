//! The picture of a run: what each provider went through and where requests went, over time,
//! recorded while the bot runs and drawn at the end as a hand-written SVG (`run.svg`, next to
//! the bench's `latency.svg`).
//!
//! One lane per provider, three bands each: its state by the timeline (healthy, or the fault
//! it was given; unknown against real providers), whether the monitor held it eligible, and
//! whether failnext's breaker held it open (cooling down). Above the bands, a tick for each
//! read it answered, a taller one for each write it answered, and a red one for each write
//! sent to it that got no response.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One look at every provider, in configured order.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// Since the run started.
    pub(crate) at: Duration,
    pub(crate) lanes: Vec<LaneState>,
}

/// One provider's state at one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LaneState {
    /// The simulated behaviour, described (`None` against real providers); `"healthy"` when it
    /// has no fault.
    pub(crate) behaviour: Option<String>,
    /// Whether the monitor held it eligible.
    pub(crate) eligible: bool,
    /// Whether failnext's breaker held it open (cooling down).
    pub(crate) cooling: bool,
}

/// What a mark stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A read the provider answered.
    Read,
    /// A write the provider answered (accepted or rejected).
    Write,
    /// A write sent to the provider that got no response (failover denied: nobody else got it).
    WriteLost,
}

/// One request a provider answered (or, for a lost write, was sent).
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    pub(crate) at: Duration,
    pub(crate) provider: usize,
    pub(crate) kind: Kind,
}

/// Everything the picture shows, recorded during the run.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pub(crate) samples: Vec<Sample>,
    pub(crate) marks: Vec<Mark>,
    /// The timeline's steps as they happened: when, and the note.
    pub(crate) steps: Vec<(Duration, String)>,
    /// Per provider: how many times the sampler saw its breaker open.
    pub(crate) openings: Vec<u64>,
}

impl Recording {
    pub(crate) fn new(providers: usize) -> Recording {
        Recording { openings: vec![0; providers], ..Recording::default() }
    }
}

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 62.0;
const LANE_H: f64 = 86.0;
const BAND_H: f64 = 14.0;
const HEALTHY: &str = "#cfe8cf";
const FAULTY: &str = "#f4a6a6";
const UNKNOWN: &str = "#e0e0e0";
const ELIGIBLE: &str = "#1b9e77";
const INELIGIBLE: &str = "#bbbbbb";
const OPEN: &str = "#d95f02";
const READ: &str = "#3060c0";
const WRITE: &str = "#7a1fa2";
const LOST: &str = "#e00000";

/// The SVG of `recording`: one lane per id in `ids` (configured order) over `elapsed`.
pub(crate) fn svg(ids: &[String], elapsed: Duration, recording: &Recording) -> String {
    let span = elapsed.as_secs_f64().max(1e-3);
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |at: Duration| LEFT + (at.as_secs_f64() / span).min(1.0) * plot_w;
    let steps_h = 14.0 * recording.steps.len() as f64;
    let lanes_bottom = TOP + LANE_H * ids.len() as f64;
    let height = lanes_bottom + 40.0 + steps_h + 20.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"12\" y=\"18\" font-size=\"15\">failnext demo: each provider over {span:.1} s \
         (bands: timeline state, monitor eligibility, breaker; ticks: reads, tall ticks: writes)</text>\n"
    );
    legend(&mut svg, 38.0);
    // Seconds grid.
    let step = if span > 40.0 {
        10.0
    } else if span > 8.0 {
        2.0
    } else {
        0.5
    };
    let mut t = 0.0;
    while t <= span + 1e-9 {
        let tx = x(Duration::from_secs_f64(t));
        let _ = writeln!(
            svg,
            "<line x1=\"{tx:.1}\" x2=\"{tx:.1}\" y1=\"{TOP}\" y2=\"{lanes_bottom}\" stroke=\"#eee\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}s</text>",
            lanes_bottom + 14.0
        );
        t += step;
    }
    for (i, id) in ids.iter().enumerate() {
        let y0 = TOP + LANE_H * i as f64;
        lane(&mut svg, i, id, y0, &x, elapsed, recording);
    }
    // The timeline's steps: a dashed line each, numbered, listed under the lanes.
    for (k, (at, note)) in recording.steps.iter().enumerate() {
        let sx = x(*at);
        let n = k + 1;
        let _ = writeln!(
            svg,
            "<line x1=\"{sx:.1}\" x2=\"{sx:.1}\" y1=\"{TOP}\" y2=\"{lanes_bottom}\" stroke=\"#555\" \
             stroke-dasharray=\"3,3\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\">{n}</text>\
             <text x=\"{LEFT}\" y=\"{:.1}\">{n}. {:.1}s {}</text>",
            sx + 2.0,
            TOP - 2.0,
            lanes_bottom + 34.0 + 14.0 * k as f64,
            at.as_secs_f64(),
            escape(note)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn legend(svg: &mut String, y: f64) {
    let items = [
        (HEALTHY, "healthy"),
        (FAULTY, "faulty (timeline)"),
        (ELIGIBLE, "eligible (monitor)"),
        (INELIGIBLE, "ineligible"),
        (OPEN, "breaker open"),
        (READ, "read"),
        (WRITE, "write"),
        (LOST, "write without response"),
    ];
    let mut lx = 12.0;
    for (color, label) in items {
        let _ = write!(
            svg,
            "<rect x=\"{lx}\" y=\"{:.1}\" width=\"10\" height=\"8\" fill=\"{color}\"/>\
             <text x=\"{:.1}\" y=\"{y:.1}\">{label}</text>",
            y - 8.0,
            lx + 13.0
        );
        lx += 13.0 + 7.0 * label.len() as f64 + 14.0;
    }
    svg.push('\n');
}

/// One provider's lane: its name, its three bands, its reads and writes.
fn lane(
    svg: &mut String,
    i: usize,
    id: &str,
    y0: f64,
    x: &dyn Fn(Duration) -> f64,
    elapsed: Duration,
    recording: &Recording,
) {
    let _ = writeln!(
        svg,
        "<g class=\"lane\" data-provider=\"{0}\"><text x=\"8\" y=\"{1:.1}\" font-size=\"13\">{0}</text>\
         <text x=\"8\" y=\"{2:.1}\" font-size=\"9\" fill=\"#666\">timeline</text>\
         <text x=\"8\" y=\"{3:.1}\" font-size=\"9\" fill=\"#666\">monitor</text>\
         <text x=\"8\" y=\"{4:.1}\" font-size=\"9\" fill=\"#666\">breaker</text>",
        escape(id),
        y0 + 14.0,
        y0 + 24.0 + BAND_H * 0.8,
        y0 + 24.0 + BAND_H * 1.8,
        y0 + 24.0 + BAND_H * 2.8,
    );
    // Requests: a short tick per read, a tall one per write, above the bands.
    lane_marks(svg, i, y0, x, recording);
    // Bands: consecutive samples with the same state make one rectangle.
    for row in 0..3 {
        lane_band(svg, i, row, y0, x, elapsed, recording);
    }
    svg.push_str("</g>\n");
}

/// A lane's requests: a short tick per read, a tall one per write, above the bands.
fn lane_marks(svg: &mut String, i: usize, y0: f64, x: &dyn Fn(Duration) -> f64, recording: &Recording) {
    for mark in recording.marks.iter().filter(|m| m.provider == i) {
        let mx = x(mark.at);
        let (top, color) = match mark.kind {
            Kind::Read => (y0 + 14.0, READ),
            Kind::Write => (y0 + 4.0, WRITE),
            Kind::WriteLost => (y0 + 4.0, LOST),
        };
        let _ = write!(
            svg,
            "<line x1=\"{mx:.1}\" x2=\"{mx:.1}\" y1=\"{top:.1}\" y2=\"{:.1}\" stroke=\"{color}\"/>",
            y0 + 22.0
        );
    }
    svg.push('\n');
}

/// One band of a lane (`row` 0 timeline, 1 monitor, 2 breaker): consecutive samples with the
/// same state make one rectangle, labelled when the label fits.
fn lane_band(
    svg: &mut String,
    i: usize,
    row: u8,
    y0: f64,
    x: &dyn Fn(Duration) -> f64,
    elapsed: Duration,
    recording: &Recording,
) {
    let by = y0 + 24.0 + BAND_H * f64::from(row);
    let _ = write!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{BAND_H}\" fill=\"none\" stroke=\"#ddd\"/>",
        x(elapsed) - LEFT
    );
    let mut runs: Vec<(Duration, Duration, Fill)> = Vec::new();
    for (k, sample) in recording.samples.iter().enumerate() {
        let Some(lane) = sample.lanes.get(i) else { continue };
        let end = recording.samples.get(k + 1).map_or(elapsed, |next| next.at);
        let this = fill(row, lane);
        match runs.last_mut() {
            Some(last) if last.2 == this => last.1 = end,
            _ => runs.push((sample.at, end, this)),
        }
    }
    for (from, to, (color, label)) in runs {
        if color == "none" {
            continue;
        }
        let (rx, rw) = (x(from), (x(to) - x(from)).max(0.5));
        let _ = write!(
            svg,
            "<rect x=\"{rx:.1}\" y=\"{by:.1}\" width=\"{rw:.1}\" height=\"{BAND_H}\" fill=\"{color}\"/>"
        );
        // About 5 px a character at this size: a label is cut to its rectangle.
        let fits = ((rw - 6.0) / 5.0).max(0.0) as usize;
        if let Some(label) = label.filter(|_| fits >= 4) {
            let label: String = if label.chars().count() > fits {
                label.chars().take(fits - 1).chain(['…']).collect()
            } else {
                label
            };
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"9\">{}</text>",
                rx + 3.0,
                by + BAND_H - 4.0,
                escape(&label)
            );
        }
    }
    svg.push('\n');
}

/// A band's colour at one sample, and the label of a fault.
type Fill = (&'static str, Option<String>);

/// How band `row` (0 timeline, 1 monitor, 2 breaker) shows `state`; `"none"`: not drawn.
fn fill(row: u8, state: &LaneState) -> Fill {
    match row {
        0 => match &state.behaviour {
            None => (UNKNOWN, None),
            Some(b) if b == "healthy" => (HEALTHY, None),
            Some(b) => (FAULTY, Some(b.clone())),
        },
        1 => (if state.eligible { ELIGIBLE } else { INELIGIBLE }, None),
        _ => (if state.cooling { OPEN } else { "none" }, None),
    }
}

/// `text` with the five XML special characters escaped, for text and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Where the picture goes by default: `$CARGO_TARGET_DIR/demo/run.svg`, or the workspace's
/// `target/demo/run.svg` (the bench writes to `target/bench/`).
pub(crate) fn default_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent();
        root.unwrap_or(Path::new(".")).join("target")
    });
    target.join("demo").join("run.svg")
}

/// Writes `svg` to `path` (its folder created), through a temporary file renamed into place so
/// two runs at once never leave a mixed file.
pub(crate) fn write(path: &Path, svg: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    std::fs::write(&temp, svg)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(behaviour: &str, eligible: bool, cooling: bool) -> LaneState {
        LaneState { behaviour: Some(behaviour.to_owned()), eligible, cooling }
    }

    fn recording() -> Recording {
        let ms = Duration::from_millis;
        Recording {
            samples: vec![
                Sample { at: ms(0), lanes: vec![lane("healthy", true, false), lane("healthy", true, false)] },
                Sample { at: ms(500), lanes: vec![lane("down", true, true), lane("healthy", true, false)] },
                Sample { at: ms(1000), lanes: vec![lane("down", false, true), lane("healthy", true, false)] },
            ],
            marks: vec![
                Mark { at: ms(100), provider: 0, kind: Kind::Read },
                Mark { at: ms(600), provider: 1, kind: Kind::Read },
                Mark { at: ms(700), provider: 1, kind: Kind::Write },
                Mark { at: ms(800), provider: 0, kind: Kind::WriteLost },
            ],
            steps: vec![(ms(500), "a <down> & \"out\"".to_owned())],
            openings: vec![1, 0],
        }
    }

    #[test]
    fn the_picture_is_an_svg_with_one_lane_per_provider_and_escaped_text() {
        let ids = ["primary".to_owned(), "b<&>\"'".to_owned()];
        let svg = svg(&ids, Duration::from_millis(1500), &recording());
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        assert_eq!(svg.matches("<g class=\"lane\"").count(), ids.len(), "{svg}");
        assert_eq!(svg.matches("<g ").count(), svg.matches("</g>").count(), "{svg}");
        assert!(svg.contains("data-provider=\"primary\""), "{svg}");
        assert!(svg.contains("data-provider=\"b&lt;&amp;&gt;&quot;&apos;\""), "{svg}");
        assert!(!svg.contains("b<&>"), "an id is escaped: {svg}");
        assert!(svg.contains("a &lt;down&gt; &amp; &quot;out&quot;"), "a note is escaped: {svg}");
        // Every `&` starts an entity, every `<` a tag.
        for (i, _) in svg.match_indices('&') {
            let entity = &svg[i..svg[i..].find(';').map_or(svg.len(), |e| i + e + 1)];
            assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity), "{entity}");
        }
        // The breaker band shows the open stretch, the faulty one its label.
        assert!(svg.contains(&format!("fill=\"{OPEN}\"")), "{svg}");
        assert!(svg.contains(">down</text>"), "{svg}");
        assert_eq!(svg.matches(&format!("stroke=\"{WRITE}\"")).count(), 1, "{svg}");
        assert_eq!(svg.matches(&format!("stroke=\"{LOST}\"")).count(), 1, "{svg}");
    }

    #[test]
    fn escape_leaves_plain_text_alone() {
        assert_eq!(escape("primary"), "primary");
        assert_eq!(escape("<&>\"'"), "&lt;&amp;&gt;&quot;&apos;");
    }
}
