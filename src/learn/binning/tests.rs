//! Tests of the private binning phase: the cut-point rule by hand, exact
//! quantiles at a huge epsilon, the noise scale (a 2x error is caught), the
//! composed costs, and a model that predicts from its own stored cut points.

use super::*;
use crate::data::{LabelMode, read_csv};
use crate::learn::{AlgorithmSpec, Model, Output, PublicFacts};
use crate::privacy::testutil::chi_square_p_value;

fn schema(column: &str) -> Schema {
    Schema::from_json(&format!(
        r#"{{"label": {{"column": "y", "positive": "1"}}, "columns": [{column},
            {{"name": "b", "type": "boolean"}}]}}"#
    ))
    .unwrap()
}

/// 400 rows: 100 each at x = 3, 10, 20, 30 (y = 1 above 15), b alternating.
fn csv() -> String {
    let mut text = String::from("x,b,y\n");
    for (i, x) in [3, 10, 20, 30].iter().cycle().take(400).enumerate() {
        text.push_str(&format!("{x},{},{}\n", i % 2, u8::from(*x > 15)));
    }
    text
}

#[test]
fn cut_rule_by_hand() {
    // Counts 10, 0, 0, 10, 0, 10, 10, 0 (total 40), k = 4: quarters at 10,
    // 20, 30 are reached after intervals 0, 3 and 5.
    assert_eq!(choose_cuts(&[10, 0, 0, 10, 0, 10, 10, 0], 4), vec![0, 3, 5]);
    // All the mass in one interval: the cuts are forced apart, and stop early
    // enough that every later one fits.
    assert_eq!(choose_cuts(&[0, 0, 0, 50, 0, 0], 3), vec![3, 4]);
    assert_eq!(choose_cuts(&[0, 0, 0, 0, 0, 50], 3), vec![3, 4]);
    // Nothing counted: the first boundaries that reach 0.
    assert_eq!(choose_cuts(&[0, 0, 0, 0], 3), vec![0, 1]);
}

/// At a huge epsilon the noise is zero (with probability 1 - 1e-40000) and
/// the cut points are the exact quartiles of a known column: base grid of 32
/// intervals on [0, 32] (cuts 1..31), values 3, 10, 20, 30 a hundred times
/// each, so the quarters are reached at 3, 10 and 20.
#[test]
fn a_huge_epsilon_gives_the_exact_quantile_cuts() {
    for (encoding, literals) in [("intervals", 4 + 1), ("thresholds", 3 + 1)] {
        let base = schema(&format!(
            r#"{{"name": "x", "type": "numeric", "min": 0, "max": 32, "bins": {{"private": 4}}, "encoding": "{encoding}", "missing": ["?"]}}"#
        ));
        let encoder = Encoder::new(&base).unwrap();
        assert_eq!(
            encoder.n_literals(),
            match encoding {
                "intervals" => 32 + 1 + 1,
                _ => 31 + 1 + 1,
            }
        );
        let data = read_csv(csv().as_bytes(), &encoder, LabelMode::Required).unwrap();
        let (_, plan) = split(Budget::new(1e6, 0.0).unwrap(), 1, false).unwrap();
        let mut rng = NoiseRng::seeded(41);
        let (derived, derived_data, names) = run(&plan, &data, &encoder, &mut rng).unwrap();
        assert_eq!(names, vec!["x".to_owned()]);
        let Column::Numeric(x) = &derived.schema().columns[0] else {
            panic!("numeric")
        };
        assert_eq!(x.thresholds, Some(vec![3.0, 10.0, 20.0]), "{encoding}");
        assert_eq!(x.bins, None);
        // The derived literals are the derived encoder's own encoding of the
        // raw rows: the OR of base intervals equals re-encoding the CSV.
        assert_eq!(derived.n_literals(), literals + 1);
        let direct = read_csv(csv().as_bytes(), &derived, LabelMode::Required).unwrap();
        assert_eq!(derived_data, direct, "{encoding}");
    }
}

/// Draws of the phase's noise against the discrete Laplace pmf of scale
/// 2 / epsilon_c (here 2), by chi-square; the same draws against the pmf of
/// a scale off by 2x are rejected.
#[test]
fn the_count_noise_has_scale_two_over_epsilon() {
    let (_, plan) = split(Budget::new(10.0, 0.0).unwrap(), 1, false).unwrap();
    // 10% of 10 to one column: epsilon_c = 1, scale 2.
    assert!((plan.epsilon_per_column - 1.0).abs() < 1e-12);
    assert!((plan.noise_scale() - 2.0).abs() < 1e-9);
    let mut rng = NoiseRng::seeded(42);
    let hist = vec![1000i128; 100];
    let k = 8i128;
    let mut counts = vec![0u64; (2 * k + 1) as usize];
    for _ in 0..2000 {
        for c in noisy_histogram(&hist, &plan, &mut rng).unwrap() {
            let z = (c as i128 - 1000).clamp(-k, k);
            counts[(z + k) as usize] += 1;
        }
    }
    // Cell probabilities, tails lumped into the end cells.
    let expected = |scale: f64| -> Vec<f64> {
        let q = (-1.0 / scale).exp();
        let norm = (1.0 - q) / (1.0 + q);
        let p = |x: i128| norm * q.powi(x.abs() as i32);
        let tail = norm * q.powi(k as i32) / (1.0 - q);
        (-k..=k)
            .map(|x| if x.abs() == k { tail } else { p(x) })
            .collect()
    };
    let p = chi_square_p_value(&counts, &expected(2.0));
    assert!(p > 1e-4, "scale 2: p = {p}, {counts:?}");
    for wrong in [1.0, 4.0] {
        let p = chi_square_p_value(&counts, &expected(wrong));
        assert!(p < 1e-10, "scale {wrong} not rejected: p = {p}");
    }
}

fn facts_of(schema: &Schema) -> PublicFacts {
    PublicFacts::new(&Encoder::new(schema).unwrap(), 32_561)
}

fn two_private() -> Schema {
    Schema::from_json(
        r#"{"label": {"column": "y", "positive": "1"}, "columns": [
            {"name": "age", "type": "numeric", "min": 17, "max": 90, "bins": {"private": 10}},
            {"name": "hours", "type": "numeric", "min": 1, "max": 99, "bins": {"private": 8}},
            {"name": "b", "type": "boolean"}]}"#,
    )
    .unwrap()
}

/// The charge includes the phase, by hand. LazyBB at epsilon = 1, delta = 0
/// with two private columns: the learner gets 0.9, the phase 0.1 (0.05 per
/// column, scale 2 / 0.05 = 40), pure 1.0 in all; of the learner's 0.9 the
/// vote threshold gets 0.025 (100 / (n 0.9) is below every larger share
/// for Adult's n) and the rounds the rest, 0.8775.
#[test]
fn a_pure_learner_is_charged_the_phase() {
    let facts = facts_of(&two_private());
    assert_eq!(facts.private_bins, 2);
    // Planned on the shape it trains on: 10 + 8 intervals and the boolean.
    assert_eq!(facts.n_features, 3);
    let budget = Budget::new(1.0, 0.0).unwrap();
    let plan = AlgorithmSpec::default().plan(budget, facts).unwrap();
    assert_eq!(plan.cost, PrivacyCost::Pure { epsilon: 1.0 });
    let phase = plan.binning.clone().unwrap();
    assert!((phase.epsilon - 0.1).abs() < 1e-15);
    assert!((phase.epsilon_per_column - 0.05).abs() < 1e-15);
    assert!((phase.noise_scale() - 40.0).abs() < 1e-8);
    let noise = plan.noise();
    let per_round = noise["epsilon_per_round"].as_f64().unwrap();
    assert!(
        (per_round * f64::from(plan.steps) - 0.8775).abs() < 1e-12,
        "{noise}"
    );
    assert!((noise["epsilon_vote_threshold"].as_f64().unwrap() - 0.0225).abs() < 1e-12);
    assert!((noise["epsilon_per_fit"].as_f64().unwrap() - 0.9).abs() < 1e-12);
    assert_eq!(noise["binning"]["columns"], 2);
    // Without private bins the whole budget goes to the learner.
    let public = schema(r#"{"name": "x", "type": "numeric", "min": 0, "max": 32, "bins": 4}"#);
    let plain = AlgorithmSpec::default()
        .plan(budget, facts_of(&public))
        .unwrap();
    assert!(plain.binning.is_none());
    assert!(plain.noise().get("binning").is_none());
}

/// DP-EBM (zCDP) at epsilon = 1, delta = 1e-6: rho = rho_for(1, 1e-6); the
/// phase takes 10% of it as a pure epsilon_b = sqrt(2 * 0.1 rho), the learner
/// the rest; the composed rho is the job's rho again and converts back to
/// epsilon = 1.
#[test]
fn a_zcdp_learner_is_charged_the_phase() {
    let budget = Budget::new(1.0, 1e-6).unwrap();
    let plan = AlgorithmSpec::DpEbm(Default::default())
        .plan(budget, facts_of(&two_private()))
        .unwrap();
    let rho = zcdp::rho_for(1.0, 1e-6).unwrap();
    let phase = plan.binning.clone().unwrap();
    assert!((phase.epsilon - (0.2 * rho).sqrt()).abs() < 1e-12);
    let PrivacyCost::Zcdp {
        rho: total,
        epsilon,
        delta,
    } = plan.cost
    else {
        panic!("{:?}", plan.cost)
    };
    assert!((total - rho).abs() < 1e-9 * rho, "{total} vs {rho}");
    assert!((1.0..1.0 + 1e-9).contains(&epsilon), "{epsilon}");
    assert_eq!(delta, 1e-6);
    // The learner's own rho is the other 90%.
    let learner_rho = plan.noise()["rho"].as_f64().unwrap();
    assert!(
        (learner_rho - 0.9 * rho).abs() < 1e-9 * rho,
        "{learner_rho}"
    );
}

/// DP-EBM at delta = 0 is a pure learner: the binning phase takes 10% of
/// epsilon (not of rho), both phases are pure DP and the job's cost is
/// pure epsilon = 1; the learner's own releases are Laplace on the other
/// 90%.
#[test]
fn a_pure_dp_ebm_is_charged_the_phase_in_epsilon() {
    let budget = Budget::new(1.0, 0.0).unwrap();
    let plan = AlgorithmSpec::DpEbm(Default::default())
        .plan(budget, facts_of(&two_private()))
        .unwrap();
    let phase = plan.binning.clone().unwrap();
    assert!(!phase.summary().of_rho);
    assert!((phase.epsilon - 0.1).abs() < 1e-15);
    let PrivacyCost::Pure { epsilon } = plan.cost else {
        panic!("{:?}", plan.cost)
    };
    assert!((epsilon - 1.0).abs() < 1e-12, "{epsilon}");
    let noise = plan.noise();
    assert!(noise.get("rho").is_none(), "{noise}");
    // A classifier's parts include the threshold calibration.
    let learner: f64 = [
        "epsilon_binning",
        "epsilon_intercept",
        "epsilon_calibration",
        "epsilon_training",
    ]
    .iter()
    .map(|k| noise[k].as_f64().unwrap())
    .sum();
    assert!((learner - 0.9).abs() < 1e-12, "{noise}");
    assert!(
        noise["mechanism"].as_str().unwrap().contains("Laplace"),
        "{noise}"
    );
}

/// A model trained with private bins stores the chosen cut points as
/// explicit thresholds; reloaded from its file it predicts raw rows exactly
/// as before, and its statement names the phase and the job's total.
#[test]
fn a_model_predicts_from_its_own_stored_cut_points() {
    let base =
        schema(r#"{"name": "x", "type": "numeric", "min": 0, "max": 32, "bins": {"private": 4}}"#);
    let encoder = Encoder::new(&base).unwrap();
    let data = read_csv(csv().as_bytes(), &encoder, LabelMode::Required).unwrap();
    for spec in [
        AlgorithmSpec::default(),
        AlgorithmSpec::DpEbm(Default::default()),
        AlgorithmSpec::DpLinear(Default::default()),
        AlgorithmSpec::Dpboost(Default::default()),
    ] {
        let budget = Budget::new(1e4, 1e-6).unwrap();
        let plan = spec
            .plan(budget, PublicFacts::new(&encoder, data.n_rows()))
            .unwrap();
        let mut rng = NoiseRng::seeded(43);
        let model = plan.fit(&data, &encoder, &mut rng, &mut |_| true).unwrap();
        let loaded = Model::from_json(&model.to_json()).unwrap();
        assert_eq!(loaded, model);
        assert!(!loaded.schema().has_private_bins());
        let Column::Numeric(x) = &loaded.schema().columns[0] else {
            panic!("numeric")
        };
        assert_eq!(x.thresholds.as_ref().map(Vec::len), Some(3));
        let statement = loaded.privacy_json();
        let epsilon = statement["epsilon"].as_f64().unwrap();
        assert!((epsilon - 1e4).abs() < 1e-6, "{statement}");
        assert_eq!(statement["binning"]["columns"][0], "x");
        assert!(
            statement["mechanisms"]
                .as_array()
                .unwrap()
                .contains(&"discrete-laplace".into())
        );
        let predict = |m: &Model, x: f64| -> Output {
            let row = serde_json::json!({"x": x, "b": "1"});
            let mut active = Vec::new();
            m.encoder()
                .unwrap()
                .encode_json_row(row.as_object().unwrap(), 1, &mut active)
                .unwrap();
            m.predictor().predict(&active)
        };
        for x in [0.0, 3.0, 9.5, 15.0, 25.0, 32.0] {
            assert_eq!(predict(&model, x), predict(&loaded, x));
        }
    }
}

/// An epsilon whose binning noise the exact sampler cannot draw is refused
/// by the split (which the plan runs before any charge), naming the
/// `epsilon` field. (At such an epsilon the learners' own plans refuse too.)
#[test]
fn an_unusable_binning_scale_is_refused() {
    let e = split(Budget::new(1e-300, 0.0).unwrap(), 2, false).unwrap_err();
    assert_eq!(e.field(), "epsilon", "{e}");
    assert!(e.to_string().contains("private binning"), "{e}");
}
