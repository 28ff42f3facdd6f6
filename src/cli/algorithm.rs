//! The `--algorithm` flag and every learner's parameter flags, shared by
//! `train`, `eval` and `bench`, mapped to the library's [`AlgorithmSpec`]
//! in one place. A flag of another learner is an error, not ignored.

use anyhow::bail;
use clap::Args;
use privboost::learn::auto::AutoSpec;
use privboost::learn::dpboost::DpBoostSpec;
use privboost::learn::dpboost::params::LeafRelease;
use privboost::learn::ebm::EbmSpec;
use privboost::learn::linear::{LinearSolver, LinearSpec, NumericFeatures};
use privboost::learn::naive_bayes::NaiveBayesSpec;
use privboost::learn::params::WeakLearnerName;
use privboost::learn::{AlgorithmName, AlgorithmSpec, LazyBbSpec};

/// The learner, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AlgorithmArg {
    /// LazyBB smooth boosting (default).
    Lazybb,
    /// DP-EBM: differentially private explainable boosting (zCDP with
    /// --delta > 0, pure DP with --delta 0).
    DpEbm,
    /// dp-linear: DP logistic / linear regression (pure DP with --delta 0).
    DpLinear,
    /// DPBoost: DP gradient boosting with an ensemble of ensembles (pure DP).
    Dpboost,
    /// auto: the private choice of the best learner (docs/accuracy.md, "auto").
    Auto,
    /// ldp-naive-bayes: naive Bayes on sampled-column local-DP reports
    /// (with --local-dp-protocol sampled-column).
    LdpNaiveBayes,
}

impl AlgorithmArg {
    fn name(self) -> AlgorithmName {
        match self {
            AlgorithmArg::Lazybb => AlgorithmName::Lazybb,
            AlgorithmArg::DpEbm => AlgorithmName::DpEbm,
            AlgorithmArg::DpLinear => AlgorithmName::DpLinear,
            AlgorithmArg::Dpboost => AlgorithmName::Dpboost,
            AlgorithmArg::Auto => AlgorithmName::Auto,
            AlgorithmArg::LdpNaiveBayes => AlgorithmName::LdpNaiveBayes,
        }
    }
}

/// The weak learner, as named on the command line: the API's and the model
/// file's names (`dp-1r`, `dp-top-down`); the older CLI spellings
/// `one-rule` and `top-down` stay accepted as aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WeakLearnerArg {
    /// DP decision stumps (LazyBB §4.1).
    #[value(name = "dp-1r", alias = "one-rule")]
    OneRule,
    /// DP TopDown trees (LazyBB §4.2), calibrated with the proven bound.
    #[value(name = "dp-top-down", alias = "top-down")]
    TopDown,
}

impl WeakLearnerArg {
    /// The name recorded in models and requests.
    pub fn name(self) -> WeakLearnerName {
        match self {
            WeakLearnerArg::OneRule => WeakLearnerName::OneRule,
            WeakLearnerArg::TopDown => WeakLearnerName::TopDown,
        }
    }
}

/// How dp-linear uses numeric interval columns, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NumericFeaturesArg {
    /// One coefficient per interval literal.
    Intervals,
    /// One coefficient on the interval's midpoint mapped onto [-1, 1].
    Linear,
    /// The line (stepped jointly with the other lines) plus one correction per interval.
    Both,
}

impl NumericFeaturesArg {
    /// The library's value.
    pub fn value(self) -> NumericFeatures {
        match self {
            NumericFeaturesArg::Intervals => NumericFeatures::Intervals,
            NumericFeaturesArg::Linear => NumericFeatures::Linear,
            NumericFeaturesArg::Both => NumericFeatures::Both,
        }
    }
}

/// dp-linear's solver, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SolverArg {
    /// Cyclic block Newton steps on noisy sums, every epoch.
    BlockDescent,
    /// Noiseless gradient descent on a regularised objective, the
    /// coefficients released once with noise.
    OutputPerturbation,
    /// A hidden random term in the regularised objective, its approximate
    /// minimiser released once with noise (binary, pure DP).
    ObjectivePerturbation,
}

impl SolverArg {
    /// The library's value.
    pub fn value(self) -> LinearSolver {
        match self {
            SolverArg::BlockDescent => LinearSolver::BlockDescent,
            SolverArg::OutputPerturbation => LinearSolver::OutputPerturbation,
            SolverArg::ObjectivePerturbation => LinearSolver::ObjectivePerturbation,
        }
    }
}

/// How DPBoost releases its leaf values, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LeavesArg {
    /// Newton steps from noisy gradient and hessian sums.
    Newton,
    /// The paper's clipped mean with noise for a one-row leaf.
    ClippedMean,
}

/// Learner flags of `train`.
#[derive(Debug, Args)]
pub struct AlgorithmArgs {
    /// The learner.
    #[arg(long, value_enum, default_value_t = AlgorithmArg::Lazybb)]
    pub algorithm: AlgorithmArg,
    /// LazyBB: boosting rounds tau [default: from the default rule for epsilon].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Learning rate: LazyBB's lambda in (0, 1) [default: 0.25]; DP-EBM's
    /// in (0, 1], a fraction of a Newton step [default: from its rule,
    /// 10^-1.75 (n / s)^0.875 (0.625 for regression with --delta > 0) in
    /// [0.01, 1], s the noise of one leaf sum];
    /// dp-linear's step in (0, 2] [default: 1];
    /// DPBoost's eta in (0, 1) [default: 0.3 classification, 0.1 regression].
    #[arg(long)]
    pub learning_rate: Option<f64>,
    /// LazyBB: density kappa in (0, 1) [default: 0.25].
    #[arg(long)]
    pub density: Option<f64>,
    /// LazyBB: the weak learner [default: dp-1r].
    #[arg(long, value_enum)]
    pub weak_learner: Option<WeakLearnerArg>,
    /// LazyBB: internal nodes per tree, for `--weak-learner dp-top-down`
    /// [default: from the TopDown default rule].
    #[arg(long)]
    pub internal_nodes: Option<u32>,
    /// LazyBB, binary label: share of epsilon for the vote threshold, in
    /// [0, 0.5]; 0 for none [default: the largest of 0.025, 0.05, 0.1, 0.2
    /// at most 100 / (n epsilon), else 0.025].
    #[arg(long)]
    pub vote_threshold_share: Option<f64>,
    /// DP-EBM: cyclic passes over the features [default: 10, 20 for
    /// regression, 5 with --delta 0]; dp-linear: over the blocks [default:
    /// a power of two from 1 to 8, from n, the budget and the block count].
    #[arg(long)]
    pub epochs: Option<u32>,
    /// DP-EBM: target bins per feature of the private binning [default: 4 to 64 from the signal-to-noise ratio of a leaf sum; 32 for k classes].
    #[arg(long)]
    pub max_bins: Option<u32>,
    /// DP-EBM: leaves of each one-feature tree [default: 16 for binary and
    /// regression labels, 3 for k classes].
    #[arg(long)]
    pub max_leaves: Option<u32>,
    /// DP-EBM: share of the budget (of rho, or of epsilon with --delta 0)
    /// for the private binning [default: 0.1].
    #[arg(long)]
    pub binning_share: Option<f64>,
    /// DP-EBM regression: clip residuals to +-this, in label units
    /// [default: a quarter of the label's public range].
    #[arg(long)]
    pub residual_clip: Option<f64>,
    /// dp-linear: ridge penalty in units of the gradient noise [default: 4].
    #[arg(long)]
    pub ridge: Option<f64>,
    /// dp-linear: share of the budget for the curvatures [default: 0.2].
    #[arg(long)]
    pub curvature_share: Option<f64>,
    /// dp-linear: numeric interval columns as `intervals`, `linear` or `both`
    /// [default: both for binary classification with --delta > 0, intervals
    /// for other classification, linear for regression].
    #[arg(long, value_enum)]
    pub numeric_features: Option<NumericFeaturesArg>,
    /// dp-linear: share of the budget for the lines' private ranges (0: the
    /// schema's bounds) [default: 0 with intervals, else 0.1].
    #[arg(long)]
    pub range_share: Option<f64>,
    /// dp-linear: `block-descent`, `output-perturbation` (binary
    /// classification and regression) or `objective-perturbation`
    /// (classification, --delta 0) [default: block-descent].
    #[arg(long, value_enum)]
    pub solver: Option<SolverArg>,
    /// dp-linear output and objective perturbation: the regulariser lambda
    /// [default: from n, the budget and the feature count].
    #[arg(long)]
    pub regularization: Option<f64>,
    /// dp-linear and DPBoost, binary label: share of the budget for the
    /// decision threshold, in [0, 0.5]; 0 for none [default: the largest of
    /// 0.025, 0.05, 0.1, 0.2 at most K / (n epsilon), else 0.025; K = 400
    /// for dp-linear, 800 for DPBoost].
    #[arg(long)]
    pub threshold_share: Option<f64>,
    /// DPBoost: trees per ensemble T_e [default: 10].
    #[arg(long)]
    pub trees_per_ensemble: Option<u32>,
    /// DPBoost: number of ensembles [default: 1].
    #[arg(long)]
    pub ensembles: Option<u32>,
    /// DPBoost: depth of every tree [default: 3].
    #[arg(long)]
    pub max_depth: Option<u32>,
    /// DPBoost: share of each ensemble's epsilon for the splits [default: 0.5].
    #[arg(long)]
    pub split_share: Option<f64>,
    /// DPBoost: share of epsilon for the noisy initial score, 0 for a public
    /// start at 0 [default: 0.05].
    #[arg(long)]
    pub init_share: Option<f64>,
    /// DPBoost: leaf values as `newton` steps from noisy sums or the
    /// paper's `clipped-mean` [default: newton].
    #[arg(long, value_enum)]
    pub leaves: Option<LeavesArg>,
    /// auto: share of the rows held out to score the candidates, in (0, 1)
    /// [default: about 1,000 rows, 10% to 25%].
    #[arg(long)]
    pub validation_share: Option<f64>,
}

impl AlgorithmArgs {
    /// `algorithm` with every parameter at its default.
    pub fn defaults(algorithm: AlgorithmArg) -> AlgorithmArgs {
        AlgorithmArgs {
            algorithm,
            rounds: None,
            learning_rate: None,
            density: None,
            weak_learner: None,
            internal_nodes: None,
            vote_threshold_share: None,
            epochs: None,
            max_bins: None,
            max_leaves: None,
            binning_share: None,
            residual_clip: None,
            ridge: None,
            curvature_share: None,
            range_share: None,
            numeric_features: None,
            solver: None,
            regularization: None,
            threshold_share: None,
            trees_per_ensemble: None,
            ensembles: None,
            max_depth: None,
            split_share: None,
            init_share: None,
            leaves: None,
            validation_share: None,
        }
    }

    /// The library's spec; flags of another learner are refused.
    pub fn spec(&self) -> anyhow::Result<AlgorithmSpec> {
        let name = self.algorithm.name();
        let lazybb = [
            ("--rounds", self.rounds.is_some()),
            ("--density", self.density.is_some()),
            ("--weak-learner", self.weak_learner.is_some()),
            ("--internal-nodes", self.internal_nodes.is_some()),
            (
                "--vote-threshold-share",
                self.vote_threshold_share.is_some(),
            ),
        ];
        let ebm = [
            ("--max-bins", self.max_bins.is_some()),
            ("--max-leaves", self.max_leaves.is_some()),
            ("--binning-share", self.binning_share.is_some()),
            ("--residual-clip", self.residual_clip.is_some()),
        ];
        let linear = [
            ("--ridge", self.ridge.is_some()),
            ("--curvature-share", self.curvature_share.is_some()),
            ("--numeric-features", self.numeric_features.is_some()),
            ("--range-share", self.range_share.is_some()),
            ("--solver", self.solver.is_some()),
            ("--regularization", self.regularization.is_some()),
        ];
        let dpboost = [
            ("--trees-per-ensemble", self.trees_per_ensemble.is_some()),
            ("--ensembles", self.ensembles.is_some()),
            ("--max-depth", self.max_depth.is_some()),
            ("--split-share", self.split_share.is_some()),
            ("--init-share", self.init_share.is_some()),
            ("--leaves", self.leaves.is_some()),
        ];
        let epochs = [("--epochs", self.epochs.is_some())];
        // dp-linear's and DPBoost's decision threshold.
        let threshold = [("--threshold-share", self.threshold_share.is_some())];
        let auto = [("--validation-share", self.validation_share.is_some())];
        let learning_rate = [("--learning-rate", self.learning_rate.is_some())];
        let foreign: Vec<&(&str, bool)> = match name {
            AlgorithmName::Lazybb => ebm
                .iter()
                .chain(&linear)
                .chain(&dpboost)
                .chain(&epochs)
                .chain(&threshold)
                .chain(&auto)
                .collect(),
            AlgorithmName::DpEbm => lazybb
                .iter()
                .chain(&linear)
                .chain(&dpboost)
                .chain(&threshold)
                .chain(&auto)
                .collect(),
            AlgorithmName::DpLinear => lazybb
                .iter()
                .chain(&ebm)
                .chain(&dpboost)
                .chain(&auto)
                .collect(),
            AlgorithmName::Dpboost => lazybb
                .iter()
                .chain(&ebm)
                .chain(&linear)
                .chain(&epochs)
                .chain(&auto)
                .collect(),
            // The candidates run at their default rules, and naive Bayes
            // has no parameter: no learner's flag.
            AlgorithmName::Auto | AlgorithmName::LdpNaiveBayes => lazybb
                .iter()
                .chain(&ebm)
                .chain(&linear)
                .chain(&dpboost)
                .chain(&epochs)
                .chain(&threshold)
                .chain(&learning_rate)
                .collect(),
        };
        if let Some((flag, _)) = foreign.iter().find(|(_, given)| *given) {
            bail!("{flag} is not a parameter of --algorithm {}", name.as_str());
        }
        match name {
            AlgorithmName::Lazybb => {
                if self.internal_nodes.is_some()
                    && self.weak_learner != Some(WeakLearnerArg::TopDown)
                {
                    bail!("--internal-nodes is only for --weak-learner dp-top-down");
                }
                Ok(AlgorithmSpec::Lazybb(LazyBbSpec {
                    tau: self.rounds,
                    lambda: self.learning_rate,
                    kappa: self.density,
                    weak_learner: self.weak_learner.map(WeakLearnerArg::name),
                    internal_nodes: self.internal_nodes,
                    vote_threshold_share: self.vote_threshold_share,
                }))
            }
            AlgorithmName::DpEbm => Ok(AlgorithmSpec::DpEbm(EbmSpec {
                max_bins: self.max_bins,
                learning_rate: self.learning_rate,
                epochs: self.epochs,
                max_leaves: self.max_leaves,
                binning_share: self.binning_share,
                residual_clip: self.residual_clip,
            })),
            AlgorithmName::DpLinear => Ok(AlgorithmSpec::DpLinear(LinearSpec {
                epochs: self.epochs,
                learning_rate: self.learning_rate,
                ridge: self.ridge,
                curvature_share: self.curvature_share,
                numeric_features: self.numeric_features.map(NumericFeaturesArg::value),
                range_share: self.range_share,
                solver: self.solver.map(SolverArg::value),
                regularization: self.regularization,
                threshold_share: self.threshold_share,
            })),
            AlgorithmName::Dpboost => Ok(AlgorithmSpec::Dpboost(DpBoostSpec {
                trees_per_ensemble: self.trees_per_ensemble,
                ensembles: self.ensembles,
                max_depth: self.max_depth,
                learning_rate: self.learning_rate,
                split_share: self.split_share,
                init_share: self.init_share,
                leaves: self.leaves.map(|l| match l {
                    LeavesArg::Newton => LeafRelease::Newton,
                    LeavesArg::ClippedMean => LeafRelease::ClippedMean,
                }),
                threshold_share: self.threshold_share,
            })),
            AlgorithmName::Auto => Ok(AlgorithmSpec::Auto(AutoSpec {
                validation_share: self.validation_share,
            })),
            AlgorithmName::LdpNaiveBayes => {
                if self.validation_share.is_some() {
                    bail!("--validation-share is not a parameter of --algorithm ldp-naive-bayes");
                }
                Ok(AlgorithmSpec::LdpNaiveBayes(NaiveBayesSpec::default()))
            }
        }
    }
}
