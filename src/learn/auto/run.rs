//! The run loop of `auto`: partition the rows, run every candidate once
//! (train on the training part, release its score on the validation part),
//! keep the best noisy score.
//!
//! Privacy (docs/privacy.md, "Private selection (auto)"): the partition is
//! drawn from the CSPRNG by row index, so it is independent of the values
//! and its sizes are public; one candidate's run is `epsilon_i`-DP by
//! parallel composition (a substituted row is in one part only); the runs
//! compose by basic composition to the plan's cost; the choice of the
//! largest noisy score is post-processing. Every candidate runs, in list
//! order, whatever the scores: the work done depends on the public list
//! and n only, never on a score (no early stop).

use super::file::{AutoFile, Score};
use super::{AutoPlan, Candidate};
use crate::data::{Dataset, Encoder, Task};
use crate::learn::{LearnError, Model, Output};
use crate::privacy::{NoiseRng, selection};

/// Train `plan` on `data` with noise from `rng`; `on_step(done)` counts the
/// candidates' steps one after another and cancels on `false`.
pub fn fit(
    plan: &AutoPlan,
    data: &Dataset,
    encoder: &Encoder,
    rng: &mut NoiseRng,
    on_step: &mut dyn FnMut(u32) -> bool,
) -> Result<Model, LearnError> {
    if data.n_rows() != plan.n_rows {
        return Err(LearnError::InvalidParameter(format!(
            "the plan was made for {} rows, the data has {}",
            plan.n_rows,
            data.n_rows()
        )));
    }
    if plan.candidates.len() == 1 {
        // Nothing to choose: the one candidate trains on every row with the
        // whole budget, and no score is released.
        let winner = plan.candidates[0].plan.fit(data, encoder, rng, on_step)?;
        return AutoFile::model(encoder, plan, 0, None, winner);
    }
    let validation_rows = selection::random_partition(plan.n_rows, plan.n_validation, rng)?;
    let train_rows = complement(plan.n_rows, &validation_rows);
    let train = data.subset(&train_rows);
    let validation = data.subset(&validation_rows);
    let mut best: Option<(usize, Score, Model)> = None;
    let mut offset = 0u32;
    for (i, candidate) in plan.candidates.iter().enumerate() {
        let mut step = |done: u32| on_step(offset + done);
        let model = candidate.plan.fit(&train, encoder, rng, &mut step)?;
        offset += candidate.plan.steps;
        let score = release_score(plan, candidate, &model, &validation, rng)?;
        // Strictly better only: a tie keeps the earlier candidate (public order).
        if best.as_ref().is_none_or(|(_, b, _)| score.better_than(b)) {
            best = Some((i, score, model));
        }
    }
    let (index, score, winner) = best.ok_or(LearnError::NoRows)?;
    AutoFile::model(encoder, plan, index, Some(score), winner)
}

/// Row indices of `0..n` not in `chosen` (sorted).
fn complement(n: usize, chosen: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(n - chosen.len());
    let mut next = chosen.iter().peekable();
    for i in 0..n {
        if next.peek() == Some(&&i) {
            next.next();
        } else {
            out.push(i);
        }
    }
    out
}

/// The candidate's score on the validation part, released with its
/// epsilon: the noisy accuracy (classification) or the noisy mean clipped
/// squared error (regression); `privacy::selection` has the sensitivity
/// arguments.
fn release_score(
    plan: &AutoPlan,
    candidate: &Candidate,
    model: &Model,
    validation: &Dataset,
    rng: &mut NoiseRng,
) -> Result<Score, LearnError> {
    let epsilon = candidate.budget.epsilon();
    let outputs = model.predictor().predict_all(validation);
    let n = validation.n_rows();
    match plan.task {
        Task::Binary | Task::Multiclass { .. } => {
            // The count of correctly classified validation rows: one
            // substituted row moves it by at most 1, for two classes or k.
            let correct = match plan.task {
                Task::Binary => {
                    let labels = validation.labels.as_ref().ok_or(LearnError::NoLabels)?;
                    outputs
                        .iter()
                        .enumerate()
                        .filter(|(i, o)| match o {
                            Output::Class(p) => p.positive == labels.get(*i),
                            _ => false,
                        })
                        .count() as u64
                }
                _ => {
                    let classes = validation.classes.as_ref().ok_or(LearnError::NoLabels)?;
                    outputs
                        .iter()
                        .zip(classes)
                        .filter(|(o, y)| match o {
                            Output::Classes(p) => p.index == usize::from(**y),
                            _ => false,
                        })
                        .count() as u64
                }
            };
            let noisy = selection::noisy_correct_count(correct, epsilon, rng)?;
            Ok(Score::Accuracy {
                value: noisy as f64 / n as f64,
                n_rows: n,
                epsilon,
            })
        }
        Task::Regression { .. } => {
            let targets = validation.targets.as_ref().ok_or(LearnError::NoLabels)?;
            let rows: Vec<(f64, f64)> = outputs
                .iter()
                .zip(targets)
                .map(|(o, &y)| match o {
                    Output::Value(v) => (*v, y),
                    Output::Class(_) | Output::Classes(_) => (f64::NAN, y),
                })
                .collect();
            let clip = plan.error_clip.ok_or(LearnError::NoLabels)?;
            let mse = selection::noisy_clipped_mse(&rows, clip, epsilon, rng)?;
            Ok(Score::ClippedMse {
                value: mse,
                clip,
                n_rows: n,
                epsilon,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::complement;

    #[test]
    fn complement_of_a_part() {
        assert_eq!(complement(6, &[1, 4]), vec![0, 2, 3, 5]);
        assert_eq!(complement(3, &[]), vec![0, 1, 2]);
        assert_eq!(complement(2, &[0, 1]), Vec::<usize>::new());
    }
}
