//! The dashboard's pages (maud templates). Each page renders documents the
//! `/v1` API answered to the session's key, so it shows exactly what that
//! key may read through the API: schemas, row counts, budgets, ledgers,
//! jobs, models with their privacy statements and inspections,
//! deployments. No page reads rows; there is no row value to show.
//! maud escapes every interpolated string (column names come from users).

use maud::{DOCTYPE, Markup, html};
use serde_json::Value;

use super::inspection;
use super::session::Session;
use super::svg::{self, BurnPoint, Curve, num};

/// Text of a JSON value: strings as they are, numbers short, null as "–".
pub(super) fn text(v: &Value) -> String {
    match v {
        Value::Null => "–".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), num),
        Value::Bool(b) => b.to_string(),
        // A task such as {"kind": "binary"}: its kind.
        Value::Object(m) if m.get("kind").is_some_and(Value::is_string) => text(&m["kind"]),
        other => other.to_string(),
    }
}

/// A listed model's algorithm, or "unreadable" for a stored model that
/// does not load (`"unreadable": true` in the API's list; issue 26).
fn algorithm_text(m: &Value) -> String {
    if m["unreadable"] == Value::Bool(true) {
        "unreadable".into()
    } else {
        text(&m["algorithm"])
    }
}

/// An id shortened for a table cell (`job_fc5a1cbca8…`); the full id is
/// in the link's title and on the resource's own page.
fn short(v: &Value) -> String {
    let s = text(v);
    if s.chars().count() > 16 {
        let mut t: String = s.chars().take(14).collect();
        t.push('…');
        t
    } else {
        s
    }
}

/// A path segment for a link (ids and names are URL-safe by the API's
/// rules; anything else is percent-encoded all the same).
fn seg(v: &Value) -> String {
    super::encode(v.as_str().unwrap_or(""))
}

/// The page frame: header with navigation and the log-out button.
/// `refresh` adds a `<noscript>` refresh (a running job without JS).
pub(super) fn layout(title: &str, who: Option<&Session>, refresh: bool, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · privboost" }
                link rel="icon" type="image/svg+xml" href="/dashboard/static/favicon.svg";
                link rel="stylesheet" href="/dashboard/static/style.css";
                script src="/dashboard/static/live.js" defer {}
                @if refresh {
                    noscript { meta http-equiv="refresh" content="3"; }
                }
            }
            body {
                header {
                    a.brand href="/dashboard" { "privboost" }
                    @if let Some(s) = who {
                        nav {
                            a href="/dashboard" { "Overview" }
                            a href="/dashboard/experiments" { "Privacy–accuracy" }
                        }
                        div.who {
                            span { "key " strong { (s.key_name) } " (" (s.role) ", " code { (s.key_id) } ")" }
                            form method="post" action="/dashboard/logout" {
                                button type="submit" id="logout" { "Log out" }
                            }
                        }
                    }
                }
                main { (body) }
                footer { "Every figure here is a differentially private release or public metadata; no row of any dataset is shown." }
            }
        }
    }
}

/// The log-in form; `error` is shown above it.
pub(super) fn login(error: Option<&str>) -> Markup {
    layout(
        "Log in",
        None,
        false,
        html! {
            section.login {
                h1 { "Log in" }
                p { "Paste an API key. The dashboard shows what that key may read through the API." }
                @if let Some(e) = error {
                    p.error role="alert" id="login-error" { (e) }
                }
                form method="post" action="/dashboard/login" {
                    label for="key" { "API key" }
                    input type="password" id="key" name="key" autocomplete="off" required;
                    button type="submit" id="login" { "Log in" }
                }
            }
        },
    )
}

/// A page for a missing or foreign resource (404, as in the API).
pub(super) fn not_found(who: &Session, what: &str) -> Markup {
    layout(
        "Not found",
        Some(who),
        false,
        html! {
            h1 { "Not found" }
            p { "There is no " (what) " with that id that this key may see." }
            p { a href="/dashboard" { "Back to the overview" } }
        },
    )
}

/// A page for an error of the server.
pub(super) fn failure(who: Option<&Session>, detail: &str) -> Markup {
    layout(
        "Error",
        who,
        false,
        html! {
            h1 { "Something went wrong" }
            p { (detail) }
        },
    )
}

fn dataset_link(id: &Value, label: &Value) -> Markup {
    html! { a href=(format!("/dashboard/datasets/{}", seg(id))) { (text(label)) } }
}

fn job_link(id: &Value) -> Markup {
    html! { a href=(format!("/dashboard/jobs/{}", seg(id))) title=(text(id)) { code { (short(id)) } } }
}

fn model_link(id: &Value) -> Markup {
    if id.is_null() {
        return html! { "–" };
    }
    html! { a href=(format!("/dashboard/models/{}", seg(id))) title=(text(id)) { code { (short(id)) } } }
}

fn deployment_link(qualified: &Value, name: &Value) -> Markup {
    html! { a href=(format!("/dashboard/deployments/{}", seg(qualified))) { (text(name)) } }
}

fn state_badge(state: &Value) -> Markup {
    let s = state.as_str().unwrap_or("");
    html! { span class=(format!("state state-{s}")) { (s) } }
}

fn progress(job: &Value) -> Markup {
    let done = job["progress"]["rounds_done"].as_u64().unwrap_or(0);
    let tau = job["progress"]["tau"].as_u64().unwrap_or(0);
    html! {
        progress max=(tau.max(1)) value=(done) {}
        " " span.rounds { (done) " / " (tau) " rounds" }
    }
}

/// The overview: everything the key may see, one table per kind.
pub(super) fn overview(
    who: &Session,
    datasets: &[Value],
    jobs: &[Value],
    models: &[Value],
    deployments: &[Value],
) -> Markup {
    let dataset_name = |id: &Value| {
        datasets
            .iter()
            .find(|d| &d["id"] == id)
            .map_or_else(|| id.clone(), |d| d["name"].clone())
    };
    layout(
        "Overview",
        Some(who),
        false,
        html! {
            h1 { "Overview" }
            section {
                h2 { "Datasets" }
                @if datasets.is_empty() { p.empty { "No dataset is visible to this key." } }
                @else {
                    table #datasets {
                        thead { tr { th { "Name" } th { "Rows" } th { "Literals" } th { "State" } th { "Created" } } }
                        tbody {
                            @for d in datasets {
                                tr {
                                    td { (dataset_link(&d["id"], &d["name"])) }
                                    td.num { (text(&d["n_rows"])) }
                                    td.num { (text(&d["n_literals"])) }
                                    td { (state_badge(&d["state"])) }
                                    td { (text(&d["created_at"])) }
                                }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Jobs" }
                @if jobs.is_empty() { p.empty { "No job yet." } }
                @else {
                    table #jobs {
                        thead { tr { th { "Job" } th { "Dataset" } th { "Algorithm" } th { "State" } th { "Progress" } th { "Epsilon" } th { "Model" } } }
                        tbody {
                            @for j in jobs {
                                tr {
                                    td { (job_link(&j["id"])) }
                                    td { (dataset_link(&j["dataset_id"], &dataset_name(&j["dataset_id"]))) }
                                    td { (text(&j["params"]["algorithm"])) }
                                    td { (state_badge(&j["state"])) }
                                    td { (progress(j)) }
                                    td.num { (text(&j["charge"]["epsilon"])) }
                                    td { (model_link(&j["model_id"])) }
                                }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Models" }
                @if models.is_empty() { p.empty { "No model yet." } }
                @else {
                    table #models {
                        thead { tr { th { "Model" } th { "Dataset" } th { "Algorithm" } th { "Task" } th { "Epsilon" } th { "Created" } } }
                        tbody {
                            @for m in models {
                                tr {
                                    td { (model_link(&m["id"])) }
                                    td { (dataset_link(&m["dataset_id"], &dataset_name(&m["dataset_id"]))) }
                                    td { (algorithm_text(m)) }
                                    td { (text(&m["task"])) }
                                    td.num { (text(&m["privacy"]["epsilon"])) }
                                    td { (text(&m["created_at"])) }
                                }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Deployments" }
                @if deployments.is_empty() { p.empty { "No deployment yet." } }
                @else {
                    table #deployments {
                        thead { tr { th { "Name" } th { "Version" } th { "Model" } th { "Created by" } th { "Updated" } } }
                        tbody {
                            @for d in deployments {
                                tr {
                                    td { (deployment_link(&d["qualified_name"], &d["name"])) }
                                    td.num { (text(&d["version"])) }
                                    td { (model_link(&d["model_id"])) }
                                    td { code title=(text(&d["created_by"])) { (short(&d["created_by"])) } }
                                    td { (text(&d["updated_at"])) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// The burn-down's points from ledger entries (in ledger order): a
/// `charge` adds its epsilon, a `refund` takes it back, a `total` sets the
/// total (SPEC: the ledger is append-only, so this replays it).
pub(super) fn burn_points(entries: &[Value]) -> Vec<BurnPoint> {
    let mut charged = 0.0;
    let mut total = 0.0;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let eps = e["epsilon"].as_f64().unwrap_or(0.0);
            match e["kind"].as_str() {
                Some("charge") => charged += eps,
                Some("refund") => charged -= eps,
                Some("total") => total = eps,
                _ => {}
            }
            BurnPoint {
                entry: i + 1,
                charged: charged.max(0.0),
                total,
            }
        })
        .collect()
}

/// A dataset: schema, size, budget with its burn-down, ledger, and the
/// jobs and models on it.
pub(super) fn dataset(
    who: &Session,
    d: &Value,
    budget: &Value,
    ledger: &[Value],
    jobs: &[Value],
    models: &[Value],
) -> Markup {
    let schema = &d["schema"];
    let columns = schema["columns"].as_array().cloned().unwrap_or_default();
    layout(
        &text(&d["name"]),
        Some(who),
        false,
        html! {
            p.crumbs { a href="/dashboard" { "Overview" } " / dataset" }
            h1 { "Dataset " span #dataset-name { (text(&d["name"])) } }
            dl.facts {
                dt { "Id" } dd { code { (text(&d["id"])) } }
                dt { "Rows" } dd #n-rows { (text(&d["n_rows"])) }
                dt { "Literals" } dd { (text(&d["n_literals"])) }
                dt { "State" } dd { (state_badge(&d["state"])) }
                dt { "Owner key" } dd { code { (text(&d["owner_id"])) } }
                dt { "Created" } dd { (text(&d["created_at"])) }
            }
            section #budget {
                h2 { "Privacy budget" }
                dl.facts {
                    dt { "Total ε" } dd { (text(&budget["total"]["epsilon"])) }
                    dt { "Spent ε" } dd #spent { (text(&budget["spent"]["epsilon"])) }
                    dt { "Reserved ε" } dd { (text(&budget["reserved"]["epsilon"])) }
                    dt { "Remaining ε" } dd #remaining { (text(&budget["remaining"]["epsilon"])) }
                    dt { "Total δ" } dd { (text(&budget["total"]["delta"])) }
                    dt { "Spent δ" } dd #spent-delta { (text(&budget["spent"]["delta"])) }
                    dt { "Remaining δ" } dd #remaining-delta { (text(&budget["remaining"]["delta"])) }
                    @if let Some(column) = d["unit_column"].as_str() {
                        dt { "Protects" } dd #privacy-unit { "per person (unit " code { (column) } ", at most " (text(&d["unit_max_rows"])) " rows each)" }
                    }
                }
                h3 { "Burn-down" }
                p.note { "Epsilon charged (net of refunds) after each ledger entry, against the total then in force." }
                (svg::burn_down(&burn_points(ledger)))
            }
            section {
                h2 { "Ledger" }
                table #ledger {
                    thead { tr { th { "#" } th { "Kind" } th { "Job" } th { "ε" } th { "δ" } th { "When" } } }
                    tbody {
                        @for e in ledger {
                            tr {
                                td.num { (text(&e["seq"])) }
                                td { (text(&e["kind"])) }
                                td { @if e["job_id"].is_null() { "–" } @else { (job_link(&e["job_id"])) } }
                                td.num { (text(&e["epsilon"])) }
                                td.num { (text(&e["delta"])) }
                                td { (text(&e["created_at"])) }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Schema" }
                p { "Label " code { (text(&schema["label"]["column"])) } ", positive class " code { (text(&schema["label"]["positive"])) } }
                table #schema {
                    thead { tr { th { "Column" } th { "Type" } th { "Declared domain" } } }
                    tbody {
                        @for c in &columns {
                            tr {
                                td { (text(&c["name"])) }
                                td { (text(&c["type"])) }
                                td { (domain(c)) }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Jobs on this dataset" }
                @if jobs.is_empty() { p.empty { "None." } }
                @else {
                    table {
                        thead { tr { th { "Job" } th { "Algorithm" } th { "State" } th { "Progress" } th { "ε" } th { "Model" } } }
                        tbody {
                            @for j in jobs {
                                tr {
                                    td { (job_link(&j["id"])) }
                                    td { (text(&j["params"]["algorithm"])) }
                                    td { (state_badge(&j["state"])) }
                                    td { (progress(j)) }
                                    td.num { (text(&j["charge"]["epsilon"])) }
                                    td { (model_link(&j["model_id"])) }
                                }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Models of this dataset" }
                @if models.is_empty() { p.empty { "None." } }
                @else {
                    ul { @for m in models { li { (model_link(&m["id"])) " " (algorithm_text(m)) ", ε " (text(&m["privacy"]["epsilon"])) } } }
                }
            }
        },
    )
}

/// A column's declared domain (the owner's public schema, not the data).
fn domain(c: &Value) -> String {
    if let Some(cats) = c["categories"].as_array() {
        let names: Vec<String> = cats.iter().map(text).collect();
        return names.join(", ");
    }
    let mut parts = Vec::new();
    for k in ["min", "max", "bins"] {
        if !c[k].is_null() {
            parts.push(format!("{k} {}", text(&c[k])));
        }
    }
    parts.join(", ")
}

/// A job: state, live progress, parameters, charge, model.
pub(super) fn job(who: &Session, j: &Value, events_url: &str) -> Markup {
    let state = j["state"].as_str().unwrap_or("");
    let live = matches!(state, "queued" | "running");
    layout(
        "Job",
        Some(who),
        live,
        html! {
            p.crumbs { a href="/dashboard" { "Overview" } " / " (dataset_link(&j["dataset_id"], &Value::String("dataset".into()))) " / job" }
            h1 { "Job " code { (text(&j["id"])) } }
            div #live data-events=[live.then_some(events_url)] {
                p { "State " span #job-state { (state_badge(&j["state"])) } }
                p { (progress(j)) }
                @if live { p.note #live-note { "Live: this page follows the job (server-sent events; without JavaScript it refreshes every 3 s)." } }
            }
            dl.facts {
                dt { "Dataset" } dd { (dataset_link(&j["dataset_id"], &j["dataset_id"])) }
                dt { "Charge" } dd { "ε " (text(&j["charge"]["epsilon"])) ", δ " (text(&j["charge"]["delta"])) }
                dt { "Model" } dd #job-model { (model_link(&j["model_id"])) }
                dt { "Submitted" } dd { (text(&j["created_at"])) }
                dt { "Started" } dd { (text(&j["started_at"])) }
                dt { "Finished" } dd { (text(&j["finished_at"])) }
                @if !j["error"].is_null() { dt { "Error" } dd.error { (text(&j["error"])) } }
            }
            h2 { "Parameters" }
            (kv(&j["params"]))
        },
    )
}

/// A JSON object as a nested definition table.
pub(super) fn kv(v: &Value) -> Markup {
    match v {
        Value::Object(map) => html! {
            table.kv {
                tbody {
                    @for (k, v) in map {
                        tr { th { (k) } td { (kv(v)) } }
                    }
                }
            }
        },
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let parts: Vec<String> = items.iter().map(text).collect();
            html! { (parts.join(", ")) }
        }
        Value::Array(items) => html! { ol { @for i in items { li { (kv(i)) } } } },
        other => html! { (text(other)) },
    }
}

/// The keys of a privacy statement shown first, in this order (what was
/// spent, for whom, then how); the rest follow alphabetically.
const STATEMENT_LEAD: [&str; 7] = [
    "epsilon",
    "delta",
    "rho",
    "neighbouring",
    "n_rows",
    "accounting",
    "mechanism",
];

/// A model's privacy statement: one sentence with what was spent and the
/// guarantee in words, then every field, the spent ones first (issue 29:
/// it was an alphabetical dump with epsilon between `composition` and
/// `eta`).
pub(super) fn privacy_statement(p: &Value) -> Markup {
    let Some(map) = p.as_object() else {
        return kv(p);
    };
    let delta = p["delta"].as_f64().unwrap_or(0.0);
    let guarantee = if delta > 0.0 {
        format!(
            "(ε, δ)-differentially private with ε = {}, δ = {}",
            text(&p["epsilon"]),
            text(&p["delta"])
        )
    } else {
        format!(
            "ε-differentially private (pure DP) with ε = {}",
            text(&p["epsilon"])
        )
    };
    let unit = p["neighbouring"]
        .as_str()
        .unwrap_or("substitution of one row");
    let lead = STATEMENT_LEAD.iter().filter_map(|k| map.get_key_value(*k));
    let rest = map
        .iter()
        .filter(|(k, _)| !STATEMENT_LEAD.contains(&k.as_str()));
    html! {
        p.lead #guarantee { "Training this model spent ε = " strong { (text(&p["epsilon"])) } ", δ = " strong { (text(&p["delta"])) }
            ". The model is " (guarantee) "; neighbouring datasets: " (unit) "." }
        table.kv {
            tbody {
                @for (k, v) in lead.chain(rest) {
                    tr { th { (k) } td { (kv(v)) } }
                }
            }
        }
    }
}

/// A model: its privacy statement, parameters and inspection.
pub(super) fn model(who: &Session, m: &Value, deployments: &[Value]) -> Markup {
    layout(
        "Model",
        Some(who),
        false,
        html! {
            p.crumbs { a href="/dashboard" { "Overview" } " / " (dataset_link(&m["dataset_id"], &Value::String("dataset".into()))) " / model" }
            h1 { "Model " code { (text(&m["id"])) } }
            dl.facts {
                dt { "Algorithm" } dd #algorithm { (text(&m["algorithm"])) }
                dt { "Task" } dd { (text(&m["task"])) }
                dt { "Job" } dd { (job_link(&m["job_id"])) }
                @if !m["parent_id"].is_null() { dt { "Edited from" } dd { (model_link(&m["parent_id"])) } }
                dt { "Created" } dd { (text(&m["created_at"])) }
            }
            @if !deployments.is_empty() {
                p { "Deployed as: "
                    @for d in deployments { (deployment_link(&d["qualified_name"], &d["name"])) " " }
                }
            }
            section #privacy {
                h2 { "Privacy statement" }
                (privacy_statement(&m["privacy"]))
            }
            section {
                h2 { "Parameters" }
                (kv(&m["params"]))
            }
            section #inspection {
                h2 { "Inspection" }
                (inspection::render(&m["inspection"]))
            }
        },
    )
}

/// A deployment with the metadata of its model and its version history.
pub(super) fn deployment(who: &Session, d: &Value, versions: &[Value]) -> Markup {
    let m = &d["model"];
    let columns = m["schema"]["columns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    layout(
        "Deployment",
        Some(who),
        false,
        html! {
            p.crumbs { a href="/dashboard" { "Overview" } " / deployment" }
            h1 { "Deployment " span #deployment-name { (text(&d["name"])) } }
            dl.facts {
                dt { "Qualified name" } dd { code { (text(&d["qualified_name"])) } }
                dt { "Version" } dd #deployment-version { (text(&d["version"])) }
                dt { "Serves model" } dd { (model_link(&d["model_id"])) }
                dt { "Algorithm" } dd { (text(&m["algorithm"])) }
                dt { "Task" } dd { (text(&m["task"])) }
                dt { "Created by" } dd { code { (text(&d["created_by"])) } }
                dt { "Updated" } dd { (text(&d["updated_at"])) }
            }
            section {
                h2 { "Versions" }
                table #versions {
                    thead { tr { th { "Version" } th { "Model" } th { "Moved by" } th { "When" } th { "Rollback of" } } }
                    tbody {
                        @for v in versions {
                            tr {
                                td.num { (text(&v["version"])) }
                                td { (model_link(&v["model_id"])) }
                                td { code title=(text(&v["moved_by"])) { (short(&v["moved_by"])) } }
                                td { (text(&v["created_at"])) }
                                td { (text(&v["rollback_of"])) }
                            }
                        }
                    }
                }
            }
            section {
                h2 { "Input schema" }
                p { "Label " code { (text(&m["schema"]["label"]["column"])) } "; " (columns.len()) " input columns: "
                    (columns.iter().map(|c| text(&c["name"])).collect::<Vec<_>>().join(", ")) }
            }
            section {
                h2 { "Privacy statement" }
                (privacy_statement(&m["privacy"]))
            }
        },
    )
}

/// The privacy-accuracy curves of `privboost experiment`, from the shipped
/// results file.
pub(super) fn experiments(who: &Session, results: &Value) -> Markup {
    let datasets = results["datasets"].as_array().cloned().unwrap_or_default();
    layout(
        "Privacy–accuracy",
        Some(who),
        false,
        html! {
            h1 { "Privacy–accuracy curves" }
            p { "From " code { "docs/results/results.json" } ", shipped with this build and written by "
                code { (text(&results["command"])) } " (" (text(&results["software_version"])) "). "
                "These are the paper reproduction's figures on public benchmark data (docs/results.md), not figures of any dataset on this server." }
            @for ds in &datasets {
                @let curves: Vec<Curve> = ds["series"].as_array().into_iter().flatten().map(|s| Curve {
                    name: text(&s["name"]),
                    points: s["points"].as_array().into_iter().flatten().filter_map(|p| {
                        let eps = p[0].as_f64()?;
                        Some((eps, p[1]["accuracy_mean"].as_f64()?, p[1]["accuracy_std"].as_f64().unwrap_or(0.0)))
                    }).collect(),
                }).collect();
                @let baselines: Vec<(String, f64)> = ds["baselines"].as_array().into_iter().flatten()
                    .filter_map(|b| Some((text(&b[0]), b[1]["accuracy_mean"].as_f64()?))).collect();
                section.experiment {
                    h2 { (text(&ds["dataset"])) }
                    p.note { (text(&ds["protocol"])) "; " (text(&ds["repeats"])) " repeats; bars are ± one standard deviation; dashed lines are non-private baselines." }
                    (svg::curves(&format!("Accuracy against epsilon on {}", text(&ds["dataset"])), &curves, &baselines))
                }
            }
        },
    )
}

/// The page's CSS (served as a file so that the CSP can forbid inline styles).
pub(super) const STYLE: &str = include_str!("style.css");
/// The live job progress (EventSource), likewise a file.
pub(super) const LIVE_JS: &str = include_str!("live.js");

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_burn_down_replays_charges_refunds_and_totals() {
        let entries = [
            json!({"kind": "total", "epsilon": 2.0}),
            json!({"kind": "charge", "epsilon": 0.5}),
            json!({"kind": "charge", "epsilon": 1.0}),
            json!({"kind": "refund", "epsilon": 1.0}),
            json!({"kind": "total", "epsilon": 3.0}),
        ];
        let got: Vec<(usize, f64, f64)> = burn_points(&entries)
            .iter()
            .map(|p| (p.entry, p.charged, p.total))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 0.0, 2.0),
                (2, 0.5, 2.0),
                (3, 1.5, 2.0),
                (4, 0.5, 2.0),
                (5, 0.5, 3.0)
            ]
        );
    }

    #[test]
    fn a_task_shows_its_kind_and_long_ids_are_shortened() {
        assert_eq!(text(&json!({"kind": "binary"})), "binary");
        assert_eq!(text(&json!(0.25)), "0.25");
        assert_eq!(text(&Value::Null), "–");
        assert_eq!(short(&json!("job_0123456789abcdef")), "job_0123456789…");
        assert_eq!(short(&json!("key_1")), "key_1");
    }
}
