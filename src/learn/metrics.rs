//! Accuracy, ROC AUC, macro-F1, RMSE and MAE for evaluation (on test data
//! the owner holds).

/// Fraction of rows whose predicted class matches the label.
pub fn accuracy_of(predicted: &[bool], labels: &[bool]) -> f64 {
    assert_eq!(predicted.len(), labels.len());
    if labels.is_empty() {
        return f64::NAN;
    }
    let correct = predicted.iter().zip(labels).filter(|(p, y)| p == y).count();
    correct as f64 / labels.len() as f64
}

/// (share of rows predicted positive, share of the positive rows predicted
/// positive): the first against the true positive share shows a classifier's
/// calibration, the second is its recall. NaN when there are no rows (no
/// positive rows for the second).
pub fn positive_rates(predicted: &[bool], labels: &[bool]) -> (f64, f64) {
    assert_eq!(predicted.len(), labels.len());
    let predicted_positive = predicted.iter().filter(|&&p| p).count();
    let positives = labels.iter().filter(|&&y| y).count();
    let true_positives = predicted
        .iter()
        .zip(labels)
        .filter(|&(&p, &y)| p && y)
        .count();
    let share = |k: usize, n: usize| {
        if n == 0 {
            f64::NAN
        } else {
            k as f64 / n as f64
        }
    };
    (
        share(predicted_positive, predicted.len()),
        share(true_positives, positives),
    )
}

/// Fraction of rows where `sum >= 0` (positive, ties included) matches the label.
pub fn accuracy(vote_sums: &[i32], labels: &[bool]) -> f64 {
    assert_eq!(vote_sums.len(), labels.len());
    if labels.is_empty() {
        return f64::NAN;
    }
    let correct = vote_sums
        .iter()
        .zip(labels)
        .filter(|(s, y)| (**s >= 0) == **y)
        .count();
    correct as f64 / labels.len() as f64
}

/// Area under the ROC curve of `scores` (higher = more positive), by the
/// Mann–Whitney statistic with tied scores counted as one half. `NaN` when a
/// class is absent.
pub fn roc_auc<T: PartialOrd + Copy>(scores: &[T], labels: &[bool]) -> f64 {
    assert_eq!(scores.len(), labels.len());
    let mut pairs: Vec<(T, bool)> = scores.iter().copied().zip(labels.iter().copied()).collect();
    pairs.sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let positives = labels.iter().filter(|y| **y).count() as f64;
    let negatives = labels.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return f64::NAN;
    }
    // Sum of the (mid-)ranks of the positives.
    let mut rank_sum = 0.0;
    let mut start = 0;
    while start < pairs.len() {
        let mut end = start;
        while end < pairs.len() && pairs[end].0 == pairs[start].0 {
            end += 1;
        }
        let mid_rank = (start + 1 + end) as f64 / 2.0; // ranks start..end are 1-based start+1..=end
        let tied_positives = pairs[start..end].iter().filter(|p| p.1).count() as f64;
        rank_sum += mid_rank * tied_positives;
        start = end;
    }
    (rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives)
}

/// Fraction of rows whose predicted class index matches the label's.
pub fn multiclass_accuracy(predicted: &[usize], actual: &[u16]) -> f64 {
    assert_eq!(predicted.len(), actual.len());
    if actual.is_empty() {
        return f64::NAN;
    }
    let correct = predicted
        .iter()
        .zip(actual)
        .filter(|&(&p, &a)| p == usize::from(a))
        .count();
    correct as f64 / actual.len() as f64
}

/// Macro-averaged F1 over `k` classes: the unweighted mean, over the classes
/// that occur among the labels or the predictions, of each class's
/// `F1 = 2 TP / (2 TP + FP + FN)` (scikit-learn's `f1_score(average="macro")`,
/// so figures compare with the peers'). NaN when there are no rows.
pub fn macro_f1(predicted: &[usize], actual: &[u16], k: usize) -> f64 {
    assert_eq!(predicted.len(), actual.len());
    // Per class: true positives, predicted count, actual count.
    let mut tp = vec![0usize; k];
    let mut pred = vec![0usize; k];
    let mut act = vec![0usize; k];
    for (&p, &a) in predicted.iter().zip(actual) {
        let a = usize::from(a);
        if p < k {
            pred[p] += 1;
        }
        if a < k {
            act[a] += 1;
        }
        if p == a && a < k {
            tp[a] += 1;
        }
    }
    let scores: Vec<f64> = (0..k)
        .filter(|&c| pred[c] + act[c] > 0)
        .map(|c| 2.0 * tp[c] as f64 / (pred[c] + act[c]) as f64)
        .collect();
    if scores.is_empty() {
        return f64::NAN;
    }
    scores.iter().sum::<f64>() / scores.len() as f64
}

/// Root mean squared error of `predicted` against `actual`.
pub fn rmse(predicted: &[f64], actual: &[f64]) -> f64 {
    assert_eq!(predicted.len(), actual.len());
    let n = actual.len() as f64;
    let sq: f64 = predicted
        .iter()
        .zip(actual)
        .map(|(p, a)| (p - a).powi(2))
        .sum();
    (sq / n).sqrt()
}

/// Mean absolute error of `predicted` against `actual`.
pub fn mae(predicted: &[f64], actual: &[f64]) -> f64 {
    assert_eq!(predicted.len(), actual.len());
    let n = actual.len() as f64;
    predicted
        .iter()
        .zip(actual)
        .map(|(p, a)| (p - a).abs())
        .sum::<f64>()
        / n
}

/// Mean and sample standard deviation (n - 1 in the denominator; 0 for one value).
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n;
    if values.len() == 1 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiclass_accuracy_and_macro_f1_by_hand() {
        // Labels 0 0 1 2 2 2, predictions 0 1 1 2 2 0 (class 3 never occurs).
        let actual = [0u16, 0, 1, 2, 2, 2];
        let predicted = [0usize, 1, 1, 2, 2, 0];
        assert!((multiclass_accuracy(&predicted, &actual) - 4.0 / 6.0).abs() < 1e-15);
        // Class 0: TP 1, predicted 2, actual 2: F1 2/4 = 1/2.
        // Class 1: TP 1, predicted 2, actual 1: F1 2/3.
        // Class 2: TP 2, predicted 2, actual 3: F1 4/5.
        // Class 3 occurs nowhere and is left out (scikit-learn's macro).
        let want = (0.5 + 2.0 / 3.0 + 0.8) / 3.0;
        assert!((macro_f1(&predicted, &actual, 4) - want).abs() < 1e-15);
        assert!(macro_f1(&[], &[], 3).is_nan());
        assert!(multiclass_accuracy(&[], &[]).is_nan());
    }

    #[test]
    fn rmse_and_mae_by_hand() {
        let p = [1.0, 2.0, 4.0];
        let a = [1.0, 4.0, 1.0];
        // errors 0, -2, 3: squares 0 + 4 + 9 = 13.
        assert!((rmse(&p, &a) - (13.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert!((mae(&p, &a) - 5.0 / 3.0).abs() < 1e-15);
        assert!(
            (roc_auc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]) - 0.75).abs() < 1e-15
        );
    }

    #[test]
    fn positive_rates_hand_computed() {
        // 3 of 5 predicted positive; positives are rows 0, 1, 4, of which 0 and 4 are found.
        let predicted = [true, false, true, false, true];
        let labels = [true, true, false, false, true];
        assert_eq!(positive_rates(&predicted, &labels), (0.6, 2.0 / 3.0));
        assert_eq!(accuracy_of(&predicted, &labels), 0.6);
        // No positive rows: the recall is undefined.
        let (rate, recall) = positive_rates(&[true, false], &[false, false]);
        assert_eq!(rate, 0.5);
        assert!(recall.is_nan());
    }

    #[test]
    fn accuracy_counts_ties_as_positive() {
        assert_eq!(accuracy(&[1, 0, -1, -3], &[true, true, false, true]), 0.75);
    }

    #[test]
    fn auc_hand_computed() {
        // Perfect ranking, reversed, and all tied.
        assert_eq!(roc_auc(&[3, 2, -1, -2], &[true, true, false, false]), 1.0);
        assert_eq!(roc_auc(&[-3, -2, 1, 2], &[true, true, false, false]), 0.0);
        assert_eq!(roc_auc(&[0, 0, 0, 0], &[true, false, true, false]), 0.5);
        // Positives {3, 1}, negatives {2, 0}: pairs (3>2, 3>0, 1<2, 1>0) = 3/4.
        assert_eq!(roc_auc(&[3, 1, 2, 0], &[true, true, false, false]), 0.75);
        // A tie between a positive and a negative counts 1/2: {2,1} vs {1,0} -> (1 + 1 + 0.5 + 1)/4.
        assert_eq!(roc_auc(&[2, 1, 1, 0], &[true, true, false, false]), 0.875);
        assert!(roc_auc(&[1, 2], &[true, true]).is_nan());
    }

    #[test]
    fn mean_std_sample() {
        let (m, s) = mean_std(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((s - 1.290_994_448_735_805_6).abs() < 1e-12);
        assert_eq!(mean_std(&[5.0]), (5.0, 0.0));
    }
}
