//! A model's inspection as HTML and SVG, by its shape: LazyBB's vote table,
//! additive shape and TopDown trees; DP-EBM's importances and shape
//! functions; dp-linear's coefficients; DPBoost's trees. A k-class model
//! (issue 27) shows its terms per class: dp-linear's coefficients, LazyBB's
//! one-vs-rest rules and DPBoost's one-vs-rest trees under one heading per
//! class, DP-EBM's shape
//! functions with one chart and one column per class. Read from the JSON
//! that `GET /v1/models/{id}` returns (the family's inspection types), so
//! that this layer names no learner's module.

use maud::{Markup, html};
use serde_json::Value;

use super::pages::{kv, text};
use super::svg;

/// The inspection, by its shape: LazyBB's vote table and shape (and
/// trees), DP-EBM's shape functions, dp-linear's coefficients, DPBoost's
/// trees; anything else as a table of its fields.
pub(super) fn render(i: &Value) -> Markup {
    if let Some(classes) = per_class(i) {
        return classes;
    }
    if i["vote_table"].is_array() {
        lazybb(i, "vote-table")
    } else if i["shapes"].is_array() {
        ebm(i)
    } else if i["coefficients"].is_array() {
        linear(i, "coefficients")
    } else if i["trees"].is_array() && !i["initial_score"].is_null() {
        dpboost(i)
    } else {
        kv(i)
    }
}

/// A k-class inspection, or `None` for a binary or regression one (no
/// `classes` list). dp-linear lists `{class, intercept, coefficients}` per
/// class, LazyBB `{class, rules}` and DPBoost `{class, initial_score,
/// trees}` (one binary fit per class); DP-EBM lists the class names and
/// gives every bin one value per class.
fn per_class(i: &Value) -> Option<Markup> {
    let classes = i["classes"].as_array().filter(|c| !c.is_empty())?;
    if classes.iter().all(Value::is_string) && i["shapes"].is_array() {
        return Some(ebm_classes(i, classes));
    }
    let name = |c: &Value| text(&c["class"]);
    if classes.iter().all(|c| c["coefficients"].is_array()) {
        return Some(html! {
            p.note { "One coefficient vector per class (multinomial): a row's score for a class is its intercept plus the coefficients of the row's features; the probabilities are the softmax of the k scores." }
            @for (k, c) in classes.iter().enumerate() {
                section.class {
                    h3 { "Class " (name(c)) }
                    (linear(c, &format!("coefficients-{k}")))
                }
            }
        });
    }
    if classes.iter().all(|c| c["trees"].is_array()) {
        return Some(dpboost(i));
    }
    if classes.iter().all(|c| c["rules"].is_object()) {
        return Some(html! {
            p.note { "One-vs-rest: one binary LazyBB fit per class (is the row's class this one?); the predicted class has the highest vote share." }
            @for (k, c) in classes.iter().enumerate() {
                section.class {
                    h3 { "Class " (name(c)) }
                    (lazybb(&c["rules"], &format!("vote-table-{k}")))
                }
            }
        });
    }
    None
}

/// DP-EBM for k classes: the intercept per class, the importances, and each
/// feature's shape function as one chart per class and one table with a
/// column per class.
fn ebm_classes(i: &Value, classes: &[Value]) -> Markup {
    let names: Vec<String> = classes.iter().map(text).collect();
    let intercepts = i["intercepts"].as_array().cloned().unwrap_or_default();
    let shapes = i["shapes"].as_array().cloned().unwrap_or_default();
    let importances: Vec<(String, f64)> = shapes
        .iter()
        .map(|s| (text(&s["feature"]), s["importance"].as_f64().unwrap_or(0.0)))
        .collect();
    let of_class = |s: &Value, c: usize| -> Vec<(String, f64)> {
        s["bins"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| (text(&b["label"]), b["values"][c].as_f64().unwrap_or(0.0)))
            .collect()
    };
    html! {
        h3 { "Intercept per class" }
        table #intercepts {
            thead { tr { @for n in &names { th { (n) } } } }
            tbody { tr { @for v in &intercepts { td.num { (text(v)) } } } }
        }
        h3 { "Importances" }
        p.note { "Count-weighted mean |f| per feature, over the classes." }
        (svg::bars("Feature importances", &importances, "importance", svg::WIDE))
        h3 { "Shape functions per class" }
        p.note { "Each feature's term f_c(x) per bin for every class c (DP-EBM, softmax over the classes' scores); the counts are the public noisy counts of the bins." }
        @for s in &shapes {
            section.shape {
                h4 { (text(&s["feature"])) " (importance " (text(&s["importance"])) ")" }
                div.grid {
                    @for (c, n) in names.iter().enumerate() {
                        figure {
                            figcaption { "Class " (n) }
                            (svg::bars(&format!("{}: class {n}", text(&s["feature"])), &of_class(s, c), "f(x)", svg::NARROW))
                        }
                    }
                }
                details {
                    summary { "Bins" }
                    table {
                        thead { tr { th { "Bin" } th { "Noisy count" } @for n in &names { th { "f (" (n) ")" } } } }
                        tbody {
                            @for b in s["bins"].as_array().into_iter().flatten() {
                                tr {
                                    td { (text(&b["label"])) } td.num { (text(&b["count"])) }
                                    @for c in 0..names.len() { td.num { (text(&b["values"][c])) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Most bars in one chart (the tables list everything).
const MAX_BARS: usize = 40;

/// LazyBB's vote table (HTML id `table_id`), shape and trees.
fn lazybb(i: &Value, table_id: &str) -> Markup {
    let votes = i["vote_table"].as_array().cloned().unwrap_or_default();
    let bars: Vec<(String, f64)> = votes
        .iter()
        .take(MAX_BARS)
        .map(|v| (text(&v["rule"]), v["votes"].as_f64().unwrap_or(0.0)))
        .collect();
    let shapes = i["shape"].as_array().cloned().unwrap_or_default();
    let trees = i["trees"].as_array().cloned().unwrap_or_default();
    html! {
        dl.facts {
            dt { "Rounds (τ)" } dd { (text(&i["tau"])) }
            dt { "Constant votes" } dd { (text(&i["constant_votes"])) }
            dt { "Literals used" } dd { (text(&i["literals_used"])) " of " (text(&i["literals_total"])) }
            dt { "Features used" } dd { (i["features_used"].as_array().map_or(0, Vec::len)) " of " (text(&i["features_total"])) }
        }
        h3 { "Vote table" }
        p.note { "Net votes per rule: times the rule was chosen minus times its negation was (LazyBB, one vote per round)." }
        (svg::bars("Net votes per rule", &bars, "net votes", svg::WIDE))
        table id=(table_id) {
            thead { tr { th { "Rule" } th { "Feature" } th { "Condition" } th { "Net votes" } } }
            tbody {
                @for v in &votes {
                    tr { td { (text(&v["rule"])) } td { (text(&v["feature"])) } td { (text(&v["condition"])) } td.num { (text(&v["votes"])) } }
                }
            }
        }
        @if !shapes.is_empty() {
            h3 { "Additive shape per feature" }
            p.note { "What each condition adds to the score in [-1, 1] (2 v / τ): a stump ensemble is additive." }
            div.grid {
                @for s in &shapes {
                    @let items: Vec<(String, f64)> = s["entries"].as_array().into_iter().flatten()
                        .map(|e| (text(&e["condition"]), e["contribution"].as_f64().unwrap_or(0.0))).collect();
                    figure {
                        figcaption { (text(&s["feature"])) }
                        (svg::bars(&text(&s["feature"]), &items, "contribution to the score", svg::NARROW))
                    }
                }
            }
        }
        @if !trees.is_empty() {
            h3 { "Trees" }
            @for (k, t) in trees.iter().enumerate() {
                details open[k < 3] {
                    summary { "Tree " (k + 1) }
                    pre.tree { (text(&t["text"])) }
                }
            }
        }
    }
}

fn ebm(i: &Value) -> Markup {
    let shapes = i["shapes"].as_array().cloned().unwrap_or_default();
    let importances: Vec<(String, f64)> = shapes
        .iter()
        .map(|s| (text(&s["feature"]), s["importance"].as_f64().unwrap_or(0.0)))
        .collect();
    html! {
        dl.facts { dt { "Intercept" } dd { (text(&i["intercept"])) } }
        h3 { "Importances" }
        p.note { "Count-weighted mean |f| per feature." }
        (svg::bars("Feature importances", &importances, "importance", svg::WIDE))
        h3 { "Shape functions" }
        p.note { "Each feature's term f(x) per bin (DP-EBM); the counts are the public noisy counts of the bins." }
        div.grid {
            @for s in &shapes {
                @let items: Vec<(String, f64)> = s["bins"].as_array().into_iter().flatten()
                    .map(|b| (text(&b["label"]), b["value"].as_f64().unwrap_or(0.0))).collect();
                figure.shape {
                    figcaption { (text(&s["feature"])) " (importance " (text(&s["importance"])) ")" }
                    (svg::bars(&text(&s["feature"]), &items, "f(x)", svg::NARROW))
                    details {
                        summary { "Bins" }
                        table {
                            thead { tr { th { "Bin" } th { "Noisy count" } th { "f" } } }
                            tbody {
                                @for b in s["bins"].as_array().into_iter().flatten() {
                                    tr { td { (text(&b["label"])) } td.num { (text(&b["count"])) } td.num { (text(&b["value"])) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// dp-linear's coefficients (HTML id `table_id`), largest first.
fn linear(i: &Value, table_id: &str) -> Markup {
    let mut coefs = i["coefficients"].as_array().cloned().unwrap_or_default();
    coefs.sort_by(|a, b| {
        let f = |v: &Value| v["coefficient"].as_f64().unwrap_or(0.0).abs();
        f(b).total_cmp(&f(a))
    });
    let bars: Vec<(String, f64)> = coefs
        .iter()
        .take(MAX_BARS)
        .map(|c| {
            (
                text(&c["feature"]),
                c["coefficient"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    html! {
        dl.facts { dt { "Intercept" } dd { (text(&i["intercept"])) } }
        h3 { "Coefficients" }
        p.note { "Largest |coefficient| first (at most " (MAX_BARS) " bars; the table lists all)." }
        (svg::bars("Coefficients", &bars, "coefficient", svg::WIDE))
        table id=(table_id) {
            thead { tr { th { "Feature" } th { "Column" } th { "Coefficient" } th { "Per unit" } th { "Noisy curvature" } } }
            tbody {
                @for c in &coefs {
                    tr {
                        td { (text(&c["feature"])) } td { (text(&c["block"])) }
                        td.num { (text(&c["coefficient"])) } td.num { (text(&c["per_unit"])) } td.num { (text(&c["curvature"])) }
                    }
                }
            }
        }
    }
}

fn dpboost(i: &Value) -> Markup {
    // k classes: one binary fit per class (one-vs-rest), each with its
    // initial score and trees.
    if let Some(classes) = i["classes"].as_array() {
        return html! {
            p.note { "One-vs-rest over " (classes.len()) " classes: one binary fit per class; a class's probability is its fit's, normalised over the classes (not calibrated)." }
            @for c in classes {
                h3 { "Class " (text(&c["class"])) }
                (dpboost_trees(&c["initial_score"], &i["trees_per_ensemble"], &c["trees"]))
            }
        };
    }
    dpboost_trees(&i["initial_score"], &i["trees_per_ensemble"], &i["trees"])
}

fn dpboost_trees(initial_score: &Value, per_ensemble: &Value, trees: &Value) -> Markup {
    let trees = trees.as_array().cloned().unwrap_or_default();
    html! {
        dl.facts {
            dt { "Initial score" } dd { (text(initial_score)) }
            dt { "Trees per ensemble" } dd { (text(per_ensemble)) }
            dt { "Trees" } dd { (trees.len()) }
        }
        @for (k, t) in trees.iter().enumerate() {
            details open[k < 3] {
                summary { "Tree " (k + 1) }
                @let leaves: Vec<(String, f64)> = t["leaves"].as_array().into_iter().flatten().enumerate()
                    .map(|(j, v)| (format!("leaf {}", j + 1), v.as_f64().unwrap_or(0.0))).collect();
                p { "Splits in heap order (a row goes left when it matches): " }
                ol.splits { @for s in t["splits"].as_array().into_iter().flatten() { li { (text(s)) } } }
                (svg::bars("Leaf values", &leaves, "leaf value", svg::WIDE))
            }
        }
    }
}
