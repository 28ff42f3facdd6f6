//! Tuning harness for DP-EBM's default rule (issue 25; docs/accuracy.md, "DP-EBM"):
//! every set given x epsilon x (learning rate, epochs) grid, k-fold CV
//! (split seed 1) with fresh OS noise, one JSON line per cell on stdout:
//! m0 accuracy or RMSE, m1 ROC AUC or the train-mean predictor's RMSE, m2
//! the predicted-positive rate, m3 the true rate, m4 the mean predicted
//! probability (multiclass sets: m0 accuracy, m1 macro-F1). `scripts/ebm_rule_lodo.py` fits the rule on its output.
//! Usage: ebm_tune DIR[,DIR..] EPS[,EPS..] DELTA LR[,LR..] EPOCHS[,E..] FOLDS REPEATS [default]
use std::fs::File;

use privboost::data::{Encoder, LabelMode, Schema, Task, read_csv};
use privboost::learn::ebm::EbmSpec;
use privboost::learn::{AlgorithmSpec, Output, PublicFacts, metrics};
use privboost::privacy::{Budget, NoiseRng};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let dirs: Vec<&str> = a[1].split(',').collect();
    let eps: Vec<f64> = a[2].split(',').map(|x| x.parse().unwrap()).collect();
    let delta: f64 = a[3].parse().unwrap();
    let lrs: Vec<f64> = a[4].split(',').map(|x| x.parse().unwrap()).collect();
    let epochs: Vec<u32> = a[5].split(',').map(|x| x.parse().unwrap()).collect();
    let folds: usize = a[6].parse().unwrap();
    let repeats: usize = a[7].parse().unwrap();
    let default = a.get(8).is_some_and(|s| s == "default");
    for dir in dirs {
        let (encoder, splits) = if dir.ends_with("adult") {
            let schema =
                Schema::from_json(&std::fs::read_to_string(format!("{dir}/schema.json")).unwrap())
                    .unwrap();
            let enc = Encoder::new(&schema).unwrap();
            let tr = read_csv(
                File::open(format!("{dir}/adult-train.csv")).unwrap(),
                &enc,
                LabelMode::Required,
            )
            .unwrap();
            let te = read_csv(
                File::open(format!("{dir}/adult-test.csv")).unwrap(),
                &enc,
                LabelMode::Required,
            )
            .unwrap();
            (enc, vec![(tr, te)])
        } else {
            let name = dir.trim_end_matches('/').rsplit('/').next().unwrap();
            let schema =
                Schema::from_json(&std::fs::read_to_string(format!("{dir}/schema.json")).unwrap())
                    .unwrap();
            let enc = Encoder::new(&schema).unwrap();
            let data = read_csv(
                File::open(format!("{dir}/{name}.csv")).unwrap(),
                &enc,
                LabelMode::Required,
            )
            .unwrap();
            let n = data.n_rows();
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(1));
            let splits = (0..folds)
                .map(|k| {
                    let (mut tr, mut te) = (Vec::new(), Vec::new());
                    for (p, &r) in order.iter().enumerate() {
                        if p % folds == k {
                            te.push(r)
                        } else {
                            tr.push(r)
                        }
                    }
                    tr.sort_unstable();
                    te.sort_unstable();
                    (data.subset(&tr), data.subset(&te))
                })
                .collect();
            (enc, splits)
        };
        let task = encoder.schema().task();
        let mut grid: Vec<(Option<f64>, Option<u32>)> = Vec::new();
        if default {
            grid.push((None, None));
        } else {
            for &lr in &lrs {
                for &e in &epochs {
                    grid.push((Some(lr), Some(e)));
                }
            }
        }
        for &epsilon in &eps {
            for &(lr, e) in &grid {
                let spec = AlgorithmSpec::DpEbm(EbmSpec {
                    learning_rate: lr,
                    epochs: e,
                    ..EbmSpec::default()
                });
                let budget = Budget::new(epsilon, delta).unwrap();
                let runs: Vec<(usize, usize)> = (0..repeats)
                    .flat_map(|r| (0..splits.len()).map(move |s| (r, s)))
                    .collect();
                let t0 = std::time::Instant::now();
                let res: Vec<[f64; 5]> = runs
                    .par_iter()
                    .map(|&(_, s)| {
                        let (train, test) = &splits[s];
                        let plan = spec
                            .plan(budget, PublicFacts::new(&encoder, train.n_rows()))
                            .unwrap();
                        let model = plan
                            .fit(
                                train,
                                &encoder,
                                &mut NoiseRng::from_os().unwrap(),
                                &mut |_| true,
                            )
                            .unwrap();
                        let out = model.predictor().predict_all(test);
                        match task {
                            Task::Binary => {
                                let l = test.labels.as_ref().unwrap();
                                let y: Vec<bool> = (0..test.n_rows()).map(|i| l.get(i)).collect();
                                let mut sc = Vec::new();
                                let (mut c, mut pp) = (0usize, 0usize);
                                let mut ps = 0.0;
                                for (o, &yy) in out.iter().zip(&y) {
                                    let Output::Class(p) = o else { panic!() };
                                    sc.push(p.score);
                                    ps += p.probability;
                                    c += usize::from(p.positive == yy);
                                    pp += usize::from(p.positive);
                                }
                                let m = y.len() as f64;
                                [
                                    c as f64 / m,
                                    metrics::roc_auc(&sc, &y),
                                    pp as f64 / m,
                                    y.iter().filter(|b| **b).count() as f64 / m,
                                    ps / m,
                                ]
                            }
                            Task::Regression { .. } => {
                                let act = test.targets.as_ref().unwrap();
                                let pr: Vec<f64> = out
                                    .iter()
                                    .map(|o| match o {
                                        Output::Value(v) => *v,
                                        _ => panic!(),
                                    })
                                    .collect();
                                let tm = train.targets.as_ref().unwrap();
                                let mean = tm.iter().sum::<f64>() / tm.len() as f64;
                                [
                                    metrics::rmse(&pr, act),
                                    metrics::rmse(&vec![mean; act.len()], act),
                                    0.0,
                                    0.0,
                                    0.0,
                                ]
                            }
                            Task::Multiclass { k } => {
                                let actual = test.classes.as_ref().unwrap();
                                let predicted: Vec<usize> = out
                                    .iter()
                                    .map(|o| match o {
                                        Output::Classes(c) => c.index,
                                        _ => panic!(),
                                    })
                                    .collect();
                                [
                                    metrics::multiclass_accuracy(&predicted, actual),
                                    metrics::macro_f1(&predicted, actual, k),
                                    0.0,
                                    0.0,
                                    0.0,
                                ]
                            }
                        }
                    })
                    .collect();
                let ms = t0.elapsed().as_secs_f64() * 1000.0 / runs.len() as f64;
                let k = res.len() as f64;
                let mean = |j: usize| res.iter().map(|r| r[j]).sum::<f64>() / k;
                let sd = |j: usize| {
                    let m = mean(j);
                    (res.iter().map(|r| (r[j] - m).powi(2)).sum::<f64>() / (k - 1.0).max(1.0))
                        .sqrt()
                };
                let plan = spec
                    .plan(budget, PublicFacts::new(&encoder, splits[0].0.n_rows()))
                    .unwrap();
                println!(
                    "{{\"set\":\"{}\",\"task\":\"{}\",\"n\":{},\"k\":{},\"eps\":{epsilon},\"delta\":{delta},\"spec\":{},\"m0\":{:.5},\"s0\":{:.5},\"m1\":{:.5},\"m2\":{:.4},\"m3\":{:.4},\"m4\":{:.4},\"ms\":{:.1},\"runs\":{}}}",
                    dir.trim_end_matches('/').rsplit('/').next().unwrap(),
                    match task {
                        Task::Binary => "binary",
                        Task::Regression { .. } => "regression",
                        Task::Multiclass { .. } => "multiclass",
                    },
                    splits[0].0.n_rows(),
                    PublicFacts::new(&encoder, 1).n_features,
                    serde_json::to_string(&plan.resolved).unwrap(),
                    mean(0),
                    sd(0),
                    mean(1),
                    mean(2),
                    mean(3),
                    mean(4),
                    ms,
                    runs.len()
                );
            }
        }
    }
}
