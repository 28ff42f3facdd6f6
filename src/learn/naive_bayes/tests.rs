//! ldp-naive-bayes: the joint estimator is unbiased (and the raw counts are
//! not), the literal weights reproduce each value's term, exact counts give
//! textbook naive Bayes, and the plan refuses what it cannot read.

use super::*;
use crate::data::{LabelMode, Schema, read_csv};
use crate::learn::{AlgorithmSpec, LazyBbSpec, PublicFacts};
use crate::local_dp::sampled_column::pair_of;
use crate::privacy::{Budget, NoiseRng, PrivacyCost};

// The schema of `local_dp::sampled_column`'s tests: intervals, thresholds with
// missing, a categorical with missing, an ignored column, a boolean.
use crate::local_dp::sampled_column::tests::schema;

/// A population of rows in which every column depends on the label.
fn population(n: usize) -> Vec<([String; 5], &'static str)> {
    (0..n)
        .map(|i| {
            let positive = i % 3 == 0;
            let age = if (i % 7 < 5) == positive { "70" } else { "20" };
            let hours = ["10", "45", "80", "?"][(i / 3 + usize::from(positive)) % 4];
            let work = ["a", "b", "NA"][(i / 5 + 2 * usize::from(positive)) % 3];
            let smoker = if i % 4 == 0 && !positive {
                "true"
            } else {
                "false"
            };
            (
                [age, hours, work, "0", smoker].map(String::from),
                if positive { "yes" } else { "no" },
            )
        })
        .collect()
}

/// Over seeded sampled-column reports of a known population, every pair
/// count estimate `(c - n q) / (p - q)` is its true count among the rows
/// that reported the column within 5 standard deviations (GRR variance,
/// Wang et al. 2017 Eq. 3); the raw counts are off by far more.
#[test]
fn the_joint_estimator_is_unbiased() {
    let schema = schema();
    let encoder = Encoder::new(&schema).unwrap();
    let epsilon = 1.0;
    let protocol = SampledColumn::new(&schema, epsilon).unwrap();
    let rows = population(120_000);
    let mut rng = NoiseRng::seeded(31);
    let mut active = Vec::new();
    let mut truth: Vec<Vec<f64>> = (0..protocol.n_features())
        .map(|f| vec![0.0; 2 * protocol.k(f) as usize])
        .collect();
    let mut reports = Vec::new();
    for (i, (cells, label)) in rows.iter().enumerate() {
        let r = protocol
            .report(&mut rng, &encoder, |c| &cells[c], label, i + 1)
            .unwrap();
        let c = protocol.schema_column(r.feature);
        let v = protocol
            .domains()
            .value_index(&encoder, c, &cells[c], i + 1, &mut active)
            .unwrap();
        let y = protocol
            .domains()
            .label_index(&encoder, label, i + 1)
            .unwrap();
        truth[r.feature][pair_index(v, y, 2) as usize] += 1.0;
        reports.push(r);
    }
    let estimates = estimate(&protocol, &reports);
    let mut raw_far = 0;
    for (f, e) in estimates.iter().enumerate() {
        let rr = protocol.rr(f);
        let (p, q) = (rr.keep(), rr.other());
        let n = e.n as f64;
        assert_eq!(n, truth[f].iter().sum::<f64>());
        for (z, (&est, &t)) in e.counts.iter().zip(&truth[f]).enumerate() {
            // Var of the count of z: n_z p (1 - p) + (n - n_z) q (1 - q).
            let var = (t * p * (1.0 - p) + (n - t) * q * (1.0 - q)) / (p - q).powi(2);
            let sd = var.sqrt();
            assert!(
                (est - t).abs() < 5.0 * sd,
                "column {f} pair {z:?} {:?}: estimate {est}, truth {t}, sd {sd}",
                pair_of(z as u32, 2)
            );
            let observed = reports
                .iter()
                .filter(|r| r.feature == f && r.pair == z as u32)
                .count() as f64;
            if (observed - t).abs() > 5.0 * sd {
                raw_far += 1;
            }
        }
    }
    // Without the debiasing 9 of the 22 cells fail the same check.
    assert!(raw_far >= 7, "raw counts too close to the truth: {raw_far}");
}

/// The literal weights give back every value's term for each kind of
/// column: intervals, thresholds with missing (nested literals, the last
/// interval lights none), categorical with missing, boolean.
#[test]
fn literal_weights_reproduce_every_term() {
    let schema = schema();
    let protocol = SampledColumn::new(&schema, 1.0).unwrap();
    for f in 0..protocol.n_features() {
        let domain = protocol.domains().columns[protocol.schema_column(f)]
            .as_ref()
            .unwrap();
        let terms: Vec<f64> = (0..domain.values.len())
            .map(|v| 0.37 * v as f64 - 1.1 + (v * v) as f64 * 0.05)
            .collect();
        let (base, w) = literal_weights(domain, &terms).unwrap();
        for (v, value) in domain.values.iter().enumerate() {
            let sum = base + value.literals.iter().map(|&l| w[l as usize]).sum::<f64>();
            assert!((sum - terms[v]).abs() < 1e-12, "column {f} value {v}");
        }
    }
}

/// With exact counts (no noise, a tiny floor) the linear model's score of
/// every row is the textbook naive Bayes log-odds computed directly.
#[test]
fn exact_counts_give_textbook_naive_bayes() {
    let schema = schema();
    let encoder = Encoder::new(&schema).unwrap();
    let protocol = SampledColumn::new(&schema, 1.0).unwrap();
    let rows = population(3_000);
    let (values, estimates) = exact_estimates(&protocol, &encoder, &rows);
    let model = naive_bayes(&protocol, &encoder, &estimates, rows.len()).unwrap();
    model.check(encoder.n_literals()).unwrap();
    let predictor = model.predictor(crate::data::Task::Binary, encoder.n_literals());
    let data = read_csv(csv_of(&rows).as_bytes(), &encoder, LabelMode::Required).unwrap();
    let class = |y: u32| values.iter().filter(|(_, l)| *l == y).count() as f64;
    for (i, (v, _)) in values.iter().enumerate().take(200) {
        let mut direct = (class(0) / class(1)).ln();
        for (f, e) in estimates.iter().enumerate() {
            let k = protocol.k(f);
            let cond = |y: u32| {
                let c = |u: u32| e.counts[pair_index(u, y, 2) as usize].max(e.floor);
                c(v[f]) / (0..k).map(c).sum::<f64>()
            };
            direct += (cond(0) / cond(1)).ln();
        }
        let score = predictor.raw(&data.features.row_active(i));
        assert!(
            (score - direct).abs() < 1e-9,
            "row {i}: {score} vs {direct}"
        );
    }
}

/// Exact joint counts over all `rows` (as if every row reported every
/// column, a tiny floor): each row's value indices and label index, and
/// the per-column estimates over the protocol's `L k_j` pairs.
#[allow(clippy::type_complexity)]
fn exact_estimates(
    protocol: &SampledColumn,
    encoder: &Encoder,
    rows: &[([String; 5], &str)],
) -> (Vec<(Vec<u32>, u32)>, Vec<ColumnEstimate>) {
    let labels = protocol.n_labels();
    let mut active = Vec::new();
    let values: Vec<(Vec<u32>, u32)> = rows
        .iter()
        .enumerate()
        .map(|(i, (cells, label))| {
            let v = (0..protocol.n_features())
                .map(|f| {
                    let c = protocol.schema_column(f);
                    protocol
                        .domains()
                        .value_index(encoder, c, &cells[c], i + 1, &mut active)
                        .unwrap()
                })
                .collect();
            let y = protocol
                .domains()
                .label_index(encoder, label, i + 1)
                .unwrap();
            (v, y)
        })
        .collect();
    let estimates = (0..protocol.n_features())
        .map(|f| {
            let mut counts = vec![0.0; (labels * protocol.k(f)) as usize];
            for (v, y) in &values {
                counts[pair_index(v[f], *y, labels) as usize] += 1.0;
            }
            ColumnEstimate {
                n: rows.len() as u64,
                counts,
                floor: 1e-3,
            }
        })
        .collect();
    (values, estimates)
}

fn csv_of(rows: &[([String; 5], &str)]) -> String {
    let mut out = String::from("age,hours,work,id,smoker,y\n");
    for (cells, label) in rows {
        out.push_str(&format!("{},{label}\n", cells.join(",")));
    }
    out
}

/// ldp-naive-bayes plans only on sampled-column datasets (no central cost,
/// one step); elsewhere it is refused naming the algorithm, and the other
/// learners are refused on sampled-column datasets.
#[test]
fn plans_only_on_sampled_column_reports() {
    let schema = schema();
    let encoder = Encoder::new(&schema).unwrap();
    let budget = Budget::new(2.0, 0.0).unwrap();
    let sampled = LocalDp::sampled_column(&schema, 2.0).unwrap();
    let all = LocalDp::new(&schema, 2.0, None).unwrap();
    let facts = |local| PublicFacts::new(&encoder, 1000).with_local_dp(local);
    let nb = AlgorithmSpec::LdpNaiveBayes(NaiveBayesSpec::default());
    let plan = nb.plan(budget, facts(Some(sampled))).unwrap();
    assert_eq!(plan.cost, PrivacyCost::LocalDp { local_epsilon: 2.0 });
    assert_eq!(plan.steps, 1);
    assert_eq!(plan.noise()["protocol"], "sampled-column");
    for local in [None, Some(all)] {
        let e = nb.plan(budget, facts(local)).unwrap_err();
        assert!(e.to_string().contains("ldp-naive-bayes"), "{e}");
        assert_eq!(e.field(), "algorithm");
    }
    let lazybb = AlgorithmSpec::Lazybb(LazyBbSpec::default());
    let e = lazybb.plan(budget, facts(Some(sampled))).unwrap_err();
    assert!(e.to_string().contains("sampled-column"), "{e}");
    assert_eq!(e.field(), "algorithm");
    // A regression schema is refused before the protocol is looked at.
    let regression = Schema::from_json(
        r#"{"label": {"column": "y", "type": "numeric", "min": 0, "max": 1},
            "columns": [{"name": "a", "type": "boolean"}]}"#,
    )
    .unwrap();
    assert!(LocalDp::sampled_column(&regression, 1.0).is_err());
}

/// A class list: the schema of [`schema`] with three classes.
fn three_class_schema() -> Schema {
    let text = serde_json::to_string(&schema()).unwrap().replace(
        r#""positive":"yes","negative":"no""#,
        r#""classes":["lo","mid","hi"]"#,
    );
    Schema::from_json(&text).unwrap()
}

/// k classes: pairs over the class list (`L k_j` values per column), and
/// with exact counts the model's k scores are `log P(c) + sum_j log P(x_j |
/// c)` up to one constant per row, so their softmax is the textbook naive
/// Bayes posterior computed directly.
#[test]
fn exact_counts_give_textbook_naive_bayes_for_k_classes() {
    let schema = three_class_schema();
    assert_eq!(schema.task(), crate::data::Task::Multiclass { k: 3 });
    let encoder = Encoder::new(&schema).unwrap();
    let protocol = SampledColumn::new(&schema, 1.0).unwrap();
    assert_eq!(protocol.n_labels(), 3);
    // The age column (two intervals) randomizes over 3 x 2 pairs.
    assert_eq!((protocol.k(0), protocol.rr(0).k()), (2, 6));
    let names = ["lo", "mid", "hi"];
    let rows: Vec<([String; 5], &str)> = population(3_000)
        .into_iter()
        .enumerate()
        .map(|(i, (cells, _))| (cells, names[(i / 2 + i % 5) % 3]))
        .collect();
    let (values, estimates) = exact_estimates(&protocol, &encoder, &rows);
    let model = naive_bayes(&protocol, &encoder, &estimates, rows.len()).unwrap();
    model.check(encoder.n_literals()).unwrap();
    assert_eq!(model.class_coefficients.len(), 2);
    let predictor = model.predictor(schema.task(), encoder.n_literals());
    let data = read_csv(csv_of(&rows).as_bytes(), &encoder, LabelMode::Required).unwrap();
    let class = |y: u32| values.iter().filter(|(_, l)| *l == y).count() as f64;
    let softmax = |s: &[f64]| {
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
        let t: f64 = e.iter().sum();
        e.into_iter().map(|x| x / t).collect::<Vec<f64>>()
    };
    for (i, (v, _)) in values.iter().enumerate().take(300) {
        let direct: Vec<f64> = (0..3u32)
            .map(|y| {
                let mut s = class(y).ln();
                for (f, e) in estimates.iter().enumerate() {
                    let c = |u: u32| e.counts[pair_index(u, y, 3) as usize].max(e.floor);
                    s += (c(v[f]) / (0..protocol.k(f)).map(c).sum::<f64>()).ln();
                }
                s
            })
            .collect();
        let scores = predictor.raw_classes(&data.features.row_active(i));
        let (p, q) = (softmax(&scores), softmax(&direct));
        for c in 0..3 {
            assert!((p[c] - q[c]).abs() < 1e-9, "row {i}: {p:?} vs {q:?}");
        }
    }
}

/// Seeded k-class reports of a population whose class decides one column:
/// the model trained from them (through the stored report rows, as the
/// server does) predicts that column's class for most rows, and each
/// report's pair is one of `3 k_j` values.
#[test]
fn trains_k_classes_from_stored_reports() {
    let schema = three_class_schema();
    let encoder = Encoder::new(&schema).unwrap();
    let protocol = SampledColumn::new(&schema, 4.0).unwrap();
    let names = ["lo", "mid", "hi"];
    let rows: Vec<([String; 5], &str)> = population(30_000)
        .into_iter()
        .enumerate()
        .map(|(i, (mut cells, _))| {
            // The work column says the class: a, b, NA for lo, mid, hi.
            cells[2] = ["a", "b", "NA"][i % 3].into();
            (cells, names[i % 3])
        })
        .collect();
    let mut rng = NoiseRng::seeded(7);
    let mut file = String::from("reported_column,reported_value,y\n");
    for (i, (cells, label)) in rows.iter().enumerate() {
        let r = protocol
            .report(&mut rng, &encoder, |c| &cells[c], label, i + 1)
            .unwrap();
        assert!(r.pair < 3 * protocol.k(r.feature), "{r:?}");
        file.push_str(&protocol.cells(&encoder, r).join(","));
        file.push('\n');
    }
    let stored = crate::local_dp::sampled_column::read_reports(
        file.as_bytes(),
        &encoder,
        &protocol,
        &crate::data::ReadOptions::new(LabelMode::Required),
    )
    .unwrap()
    .dataset;
    assert!(stored.labels.is_none());
    assert_eq!(stored.classes.as_ref().map(Vec::len), Some(rows.len()));
    let plan = NaiveBayesPlan {
        local: LocalDp::sampled_column(&schema, 4.0).unwrap(),
    };
    let model = fit(&stored, &encoder, &plan).unwrap();
    let predictor = model.predictor(schema.task(), encoder.n_literals());
    let data = read_csv(csv_of(&rows).as_bytes(), &encoder, LabelMode::Required).unwrap();
    let truth = data.classes.as_ref().unwrap();
    let right = (0..rows.len())
        .filter(|&i| {
            let s = predictor.raw_classes(&data.features.row_active(i));
            let best = (0..3).max_by(|&a, &b| s[a].total_cmp(&s[b])).unwrap();
            best == usize::from(truth[i])
        })
        .count();
    let accuracy = right as f64 / rows.len() as f64;
    assert!(accuracy > 0.9, "{accuracy}");
}
