//! The dashboard's charts as inline SVG, drawn from released values only
//! (ledger amounts, model parameters, shipped experiment results). Every
//! label goes through maud, so a hostile column name is escaped in SVG as
//! in HTML. No `style` attributes: the page's CSP forbids inline styles,
//! and presentation attributes (`fill`, `stroke`) need none.

use maud::{Markup, html};

/// Colours of successive series (distinct in grey-scale too).
const PALETTE: [&str; 6] = [
    "#1f6fb4", "#d9722b", "#2e9a4a", "#8a4fb0", "#b03a48", "#6b6b6b",
];

/// A plotting frame: data ranges mapped into a `w` x `h` box with margins
/// for the axes' labels.
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    x: (f64, f64),
    y: (f64, f64),
    log_x: bool,
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        let (a, b, v) = if self.log_x {
            (self.x.0.log10(), self.x.1.log10(), x.log10())
        } else {
            (self.x.0, self.x.1, x)
        };
        let t = if b > a { (v - a) / (b - a) } else { 0.5 };
        self.left + t * (self.w - self.left - self.right)
    }

    fn py(&self, y: f64) -> f64 {
        let (a, b) = self.y;
        let t = if b > a { (y - a) / (b - a) } else { 0.5 };
        self.h - self.bottom - t * (self.h - self.top - self.bottom)
    }

    /// Axes, grid lines at `yticks` / `xticks`, and axis titles.
    fn axes(&self, xticks: &[f64], yticks: &[f64], xlabel: &str, ylabel: &str) -> Markup {
        let (x0, x1) = (self.left, self.w - self.right);
        let (y0, y1) = (self.h - self.bottom, self.top);
        html! {
            @for &t in yticks {
                line x1=(f(x0)) x2=(f(x1)) y1=(f(self.py(t))) y2=(f(self.py(t))) stroke="#e3e3e3" {}
                text x=(f(x0 - 6.0)) y=(f(self.py(t) + 4.0)) text-anchor="end" font-size="11" fill="#444" { (num(t)) }
            }
            @for &t in xticks {
                line x1=(f(self.px(t))) x2=(f(self.px(t))) y1=(f(y0)) y2=(f(y0 + 4.0)) stroke="#444" {}
                text x=(f(self.px(t))) y=(f(y0 + 16.0)) text-anchor="middle" font-size="11" fill="#444" { (num(t)) }
            }
            line x1=(f(x0)) x2=(f(x1)) y1=(f(y0)) y2=(f(y0)) stroke="#444" {}
            line x1=(f(x0)) x2=(f(x0)) y1=(f(y0)) y2=(f(y1)) stroke="#444" {}
            text x=(f((x0 + x1) / 2.0)) y=(f(self.h - 4.0)) text-anchor="middle" font-size="12" fill="#222" { (xlabel) }
            text x="14" y=(f((y0 + y1) / 2.0)) text-anchor="middle" font-size="12" fill="#222"
                transform=(format!("rotate(-90 14 {})", f((y0 + y1) / 2.0))) { (ylabel) }
        }
    }
}

/// A coordinate with two decimals (short SVG, no float noise).
fn f(v: f64) -> String {
    format!("{v:.2}")
}

/// A tick or value label: few digits, no trailing zeros.
pub(super) fn num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.4}")
    } else {
        return format!("{v:.2e}");
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// About `n` round ticks covering `[lo, hi]`.
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if hi <= lo || !lo.is_finite() || !hi.is_finite() {
        return vec![lo];
    }
    let raw = (hi - lo) / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
    }
    out
}

/// One point of the budget burn-down: after ledger entry `seq` (its
/// position), the epsilon charged so far and the total then in force.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BurnPoint {
    pub(super) entry: usize,
    pub(super) charged: f64,
    pub(super) total: f64,
}

/// The burn-down: epsilon charged (net of refunds) after each ledger entry
/// against the total, as two step lines over the entry number.
pub(super) fn burn_down(points: &[BurnPoint]) -> Markup {
    let n = points.len().max(1) as f64;
    let ymax = points
        .iter()
        .map(|p| p.charged.max(p.total))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.08;
    let frame = Frame {
        w: 760.0,
        h: 260.0,
        left: 64.0,
        right: 16.0,
        // Room above the plot for the legend (a total near the top of the
        // scale ran under it).
        top: 34.0,
        bottom: 40.0,
        x: (0.0, n),
        y: (0.0, ymax),
        log_x: false,
    };
    // Entry i holds its value over [i - 1, i]: every entry, the last one
    // included, is drawn one unit wide (drawing the value from x = i on
    // left the last charge a zero-width step at the right edge, issue 29).
    let steps = |value: &dyn Fn(&BurnPoint) -> f64| -> String {
        let mut d = format!("M{} {}", f(frame.px(0.0)), f(frame.py(0.0)));
        for p in points {
            let x = frame.px(p.entry as f64);
            d.push_str(&format!(" V{} H{}", f(frame.py(value(p))), f(x)));
        }
        d
    };
    let xt: Vec<f64> = ticks(0.0, n, 8.min(points.len().max(1)))
        .into_iter()
        .filter(|t| t.fract() == 0.0)
        .collect();
    html! {
        svg.chart role="img" viewBox="0 0 760 260" width="760" height="260" xmlns="http://www.w3.org/2000/svg" {
            title { "Epsilon charged over the ledger's entries, against the total" }
            (frame.axes(&xt, &ticks(0.0, ymax, 5), "ledger entry", "epsilon"))
            path d=(steps(&|p| p.total)) fill="none" stroke="#b03a48" stroke-width="2" stroke-dasharray="6 4" {}
            path.charged d=(steps(&|p| p.charged)) fill="none" stroke="#1f6fb4" stroke-width="2.5" {}
            g font-size="12" {
                line x1="80" x2="104" y1="14" y2="14" stroke="#1f6fb4" stroke-width="2.5" {}
                text x="110" y="18" fill="#222" { "charged" }
                line x1="180" x2="204" y1="14" y2="14" stroke="#b03a48" stroke-width="2" stroke-dasharray="6 4" {}
                text x="210" y="18" fill="#222" { "total" }
            }
        }
    }
}

/// Width of a bar chart on its own line.
pub(super) const WIDE: f64 = 760.0;
/// Width of a bar chart in a two-column grid (shape functions).
pub(super) const NARROW: f64 = 460.0;

/// A horizontal bar chart of signed values (shape functions, coefficients,
/// votes): one bar per label, from zero, blue when positive, orange when
/// negative, with room on both sides for the values' labels.
pub(super) fn bars(title: &str, items: &[(String, f64)], unit: &str, w: f64) -> Markup {
    let row = 18.0;
    let label_w = (w * 0.36).round();
    let pad = 52.0;
    let h = 30.0 + row * items.len() as f64;
    let lim = items
        .iter()
        .map(|(_, v)| v.abs())
        .fold(0.0f64, f64::max)
        .max(1e-12);
    let any_negative = items.iter().any(|(_, v)| *v < 0.0);
    let span = w - label_w - 2.0 * pad;
    // Zero in the middle when some value is negative, else at the left.
    let (x0, half) = if any_negative {
        (label_w + pad + span / 2.0, span / 2.0)
    } else {
        (label_w + 8.0, span + pad - 8.0)
    };
    // Cut labels to what fits left of the bars at a safe per-character
    // width (6.2 px let wide labels of merged bins run off the left edge,
    // issue 29); the whole label is the text's tooltip.
    let label_chars = ((label_w - 10.0) / CHAR_W) as usize;
    html! {
        svg.chart role="img" viewBox=(format!("0 0 {w} {}", f(h))) width=(w) height=(f(h)) xmlns="http://www.w3.org/2000/svg" {
            title { (title) }
            line x1=(f(x0)) x2=(f(x0)) y1="4" y2=(f(h - 20.0)) stroke="#444" {}
            @for (i, (label, v)) in items.iter().enumerate() {
                @let y = 6.0 + row * i as f64;
                @let len = v.abs() / lim * half;
                @let x = if *v >= 0.0 { x0 } else { x0 - len };
                text x=(f(label_w - 6.0)) y=(f(y + 12.0)) text-anchor="end" font-size="11" fill="#222" { title { (label) } (truncate(label, label_chars)) }
                rect x=(f(x)) y=(f(y + 2.0)) width=(f(len.max(0.5))) height=(f(row - 5.0))
                    fill=(if *v >= 0.0 { "#1f6fb4" } else { "#d9722b" }) {}
                text x=(f(if *v >= 0.0 { x0 + len + 4.0 } else { x0 - len - 4.0 })) y=(f(y + 12.0))
                    text-anchor=(if *v >= 0.0 { "start" } else { "end" }) font-size="10" fill="#444" { (num(*v)) }
            }
            text x=(f(x0)) y=(f(h - 6.0)) text-anchor="middle" font-size="11" fill="#444" { (unit) }
        }
    }
}

/// An upper bound on the width of one character of the 11 px labels.
const CHAR_W: f64 = 6.6;

/// A label cut to `max` characters (the full text stays in tables).
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// One curve of the privacy-accuracy chart: `(epsilon, mean, std)` points.
pub(super) struct Curve {
    pub(super) name: String,
    pub(super) points: Vec<(f64, f64, f64)>,
}

/// Accuracy against epsilon (log scale) with one-standard-deviation bars,
/// and horizontal reference lines for the non-private baselines.
pub(super) fn curves(title: &str, curves: &[Curve], baselines: &[(String, f64)]) -> Markup {
    let xs = curves.iter().flat_map(|c| c.points.iter().map(|p| p.0));
    let (xmin, xmax) = xs
        .filter(|x| *x > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    let (xmin, xmax) = if xmin.is_finite() {
        (xmin, xmax)
    } else {
        (0.01, 10.0)
    };
    let ys = curves
        .iter()
        .flat_map(|c| c.points.iter().flat_map(|p| [p.1 - p.2, p.1 + p.2]))
        .chain(baselines.iter().map(|b| b.1));
    let (ylo, yhi) = ys.fold((1.0f64, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    let (ylo, yhi) = ((ylo - 0.02).max(0.0), (yhi + 0.02).min(1.0));
    // The legend sits right of the plot and is as wide as its longest name
    // (names were cut at 40 characters before, issue 29): 6.6 px per
    // character of the 11 px font is a safe upper bound for its widths.
    let longest = curves
        .iter()
        .map(|c| c.name.chars().count())
        .chain(baselines.iter().map(|b| b.0.chars().count()))
        .max()
        .unwrap_or(0);
    let legend_w = (60.0 + CHAR_W * longest as f64).max(300.0).ceil();
    let frame = Frame {
        w: 600.0 + legend_w,
        h: 340.0,
        left: 64.0,
        right: legend_w,
        top: 16.0,
        bottom: 40.0,
        x: (xmin, xmax),
        y: (ylo, yhi),
        log_x: true,
    };
    let xt: Vec<f64> = (-4..=4)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
        .filter(|t| *t >= xmin * 0.999 && *t <= xmax * 1.001)
        .collect();
    // The legend, right of the plot.
    let legend_y = |i: usize| 30.0 + 18.0 * i as f64;
    let lx = frame.w - frame.right + 16.0;
    html! {
        svg.chart role="img" viewBox=(format!("0 0 {} 340", f(frame.w))) width=(f(frame.w)) height="340" xmlns="http://www.w3.org/2000/svg" {
            title { (title) }
            (frame.axes(&xt, &ticks(ylo, yhi, 6), "epsilon (log scale)", "test accuracy"))
            @for (i, (name, acc)) in baselines.iter().enumerate() {
                @let y = frame.py(*acc);
                line x1=(f(frame.left)) x2=(f(frame.w - frame.right)) y1=(f(y)) y2=(f(y))
                    stroke="#999" stroke-dasharray=(if i % 2 == 0 { "2 3" } else { "8 3" }) {}
                @let ly = legend_y(curves.len() + i);
                line x1=(f(lx)) x2=(f(lx + 24.0)) y1=(f(ly)) y2=(f(ly)) stroke="#999" stroke-dasharray=(if i % 2 == 0 { "2 3" } else { "8 3" }) {}
                text x=(f(lx + 30.0)) y=(f(ly + 4.0)) font-size="11" fill="#222" { (name) }
            }
            @for (i, c) in curves.iter().enumerate() {
                @let colour = PALETTE[i % PALETTE.len()];
                @let d = c.points.iter().enumerate().map(|(k, p)| {
                    format!("{}{} {}", if k == 0 { "M" } else { " L" }, f(frame.px(p.0)), f(frame.py(p.1)))
                }).collect::<String>();
                @for p in &c.points {
                    line x1=(f(frame.px(p.0))) x2=(f(frame.px(p.0))) y1=(f(frame.py(p.1 - p.2))) y2=(f(frame.py(p.1 + p.2)))
                        stroke=(colour) stroke-opacity="0.5" {}
                    circle cx=(f(frame.px(p.0))) cy=(f(frame.py(p.1))) r="3" fill=(colour) {}
                }
                path d=(d) fill="none" stroke=(colour) stroke-width="2" {}
                @let ly = legend_y(i);
                line x1=(f(lx)) x2=(f(lx + 24.0)) y1=(f(ly)) y2=(f(ly)) stroke=(colour) stroke-width="2" {}
                text x=(f(lx + 30.0)) y=(f(ly + 4.0)) font-size="11" fill="#222" { (c.name) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let t = ticks(0.0, 1.0, 5);
        assert_eq!(t.len(), 6);
        assert!(
            t.iter()
                .zip(0..)
                .all(|(v, k)| (v - 0.2 * f64::from(k)).abs() < 1e-9)
        );
        let t = ticks(0.0, 7.0, 7);
        assert_eq!(t.first(), Some(&0.0));
        assert!(*t.last().unwrap() >= 7.0 - 1e-9);
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(-1.5), "-1.5");
    }

    #[test]
    fn labels_are_escaped_in_svg() {
        let svg = bars("t", &[("<script>x</script>".into(), 1.0)], "u", WIDE).into_string();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
    }

    #[test]
    fn the_burn_down_draws_the_charged_and_total_lines() {
        let pts = [
            BurnPoint {
                entry: 1,
                charged: 0.0,
                total: 1.0,
            },
            BurnPoint {
                entry: 2,
                charged: 0.5,
                total: 1.0,
            },
        ];
        let svg = burn_down(&pts).into_string();
        assert_eq!(svg.matches("<path").count(), 2);
        assert!(svg.contains("charged") && svg.contains("total"));
    }

    #[test]
    fn the_last_charge_is_drawn_one_entry_wide() {
        // One of 8 epsilon charged by the last of two entries: the plot is
        // x in [0, 2] over pixels 64..744, so entry 2 holds [404, 744].
        let pts = [
            BurnPoint {
                entry: 1,
                charged: 0.0,
                total: 8.0,
            },
            BurnPoint {
                entry: 2,
                charged: 1.0,
                total: 8.0,
            },
        ];
        let svg = burn_down(&pts).into_string();
        let d = svg
            .split("<path class=\"charged\" d=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .expect("the charged line");
        let tail: Vec<&str> = d.split(' ').rev().take(3).collect();
        // ... H404 V<y of 1.0> H744: the charge's step starts at 404.
        assert_eq!(tail[0], "H744.00", "{d}");
        assert!(tail[1].starts_with('V') && tail[1] != "V220.00", "{d}");
        assert_eq!(tail[2], "H404.00", "{d}");
    }
}
