//! Jobs: the bounded worker pool that trains models, with cancellation and
//! progress.
//!
//! On the data path this sits between the store (queued jobs, encoded rows)
//! and the library's learner. Each of `workers` async tasks claims the oldest
//! queued job from the store and runs its training on a blocking thread
//! (`spawn_blocking`), never on the async executor; so at most `workers`
//! trainings run at once. A worker wakes when a job is submitted
//! ([`JobQueue::wake`]), and also every [`POLL_INTERVAL`] so that jobs
//! queued by another process sharing the file are picked up.
//!
//! Cancellation and shutdown are checked between rounds through the
//! learner's progress callback. A cancelled job ends `cancelled`; a job
//! interrupted by shutdown goes back to the queue with its charge final, and
//! is re-run under that charge after the restart (SPEC §2, §6).
//!
//! Progress is kept in memory ([`JobControl`]) and only says how many rounds
//! are done (SPEC §2). While a job trains, its worker renews the job's lease
//! in the store every quarter of the lease, writing the rounds done and
//! reading cancellations made by any process; a job whose lease expired
//! (its process died) is re-queued by any idle worker.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tracing::{Instrument, error, info, info_span, warn};

use crate::data::{Dataset, Encoder, Schema};
use crate::learn::{LearnError, PublicFacts};
use crate::privacy::NoiseRng;
use crate::privacy::filter::{Charge, Loss};
use crate::store::{self, StoreError, jobs::ClaimedJob};

/// The stored form of a job's parameters lives with the jobs table
/// (`store::jobs`), so that the store needs nothing from this module.
pub use crate::store::jobs::JobParams;

/// How often an idle worker looks for work it was not woken for (jobs
/// queued by another process on the same file, or after a store error).
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// How often a running job renews its lease: a quarter of the lease, so
/// that a few missed renewals (a busy database) do not lose it.
fn heartbeat_interval(lease: Duration) -> Duration {
    (lease / 4).max(Duration::from_millis(100))
}

/// The lease of a running job when none is configured: a crashed process's
/// jobs re-run this long after it stopped renewing them.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The live state of a running job, shared between its worker and the API.
#[derive(Debug, Default)]
pub struct JobControl {
    /// Rounds done so far.
    pub rounds_done: AtomicU32,
    /// Set by a cancel request; read by the training callback.
    pub cancel: AtomicBool,
}

struct Inner {
    pool: crate::store::Db,
    /// Wakes one idle worker; each worker that claims a job wakes the next,
    /// so a burst of submissions reaches every idle worker.
    notify: Notify,
    /// Running jobs by id.
    running: Mutex<HashMap<String, Arc<JobControl>>>,
    /// Set once shutdown starts: training callbacks stop between rounds.
    stopping: AtomicBool,
    /// A running job whose heartbeat is older than this is re-queued.
    lease: Duration,
}

/// A cheap handle on the pool, kept in the API state.
#[derive(Clone)]
pub struct JobQueue {
    inner: Arc<Inner>,
}

/// The worker tasks; [`Workers::join`] waits until every one has stopped.
pub struct Workers {
    handles: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Wait for every worker to finish (after shutdown was signalled).
    pub async fn join(self) {
        for h in self.handles {
            if let Err(e) = h.await {
                error!(error = %e, "a worker task panicked");
            }
        }
    }
}

impl JobQueue {
    /// Start `workers` workers. They stop when `shutdown` becomes `true`.
    /// A running job whose worker has not renewed its lease for `lease` is
    /// re-queued (its process died).
    ///
    /// Each worker trains on its own pool of `threads_per_job` threads
    /// (at least 1), so at most `workers x threads_per_job` threads compute
    /// at once, whatever the jobs do.
    pub fn start(
        pool: crate::store::Db,
        workers: usize,
        threads_per_job: usize,
        lease: Duration,
        shutdown: watch::Receiver<bool>,
    ) -> (JobQueue, Workers) {
        let queue = JobQueue {
            inner: Arc::new(Inner {
                pool,
                notify: Notify::new(),
                running: Mutex::new(HashMap::new()),
                stopping: AtomicBool::new(false),
                lease,
            }),
        };
        let handles = (0..workers.max(1))
            .map(|n| {
                let q = queue.clone();
                let rx = shutdown.clone();
                let threads = training_pool(n, threads_per_job);
                tokio::spawn(
                    async move { q.worker(rx, threads).await }.instrument(info_span!("worker", n)),
                )
            })
            .collect();
        (queue, Workers { handles })
    }

    /// Tell an idle worker that a job was queued.
    pub fn wake(&self) {
        self.inner.notify.notify_one();
    }

    /// Rounds done of a running job, if it runs in this process.
    pub fn progress(&self, job_id: &str) -> Option<u32> {
        let running = self.lock_running();
        running
            .get(job_id)
            .map(|c| c.rounds_done.load(Ordering::Relaxed))
    }

    /// Ask a running job to stop between rounds.
    pub fn cancel(&self, job_id: &str) {
        if let Some(c) = self.lock_running().get(job_id) {
            c.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Number of jobs training in this process right now.
    pub fn running_count(&self) -> usize {
        self.lock_running().len()
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<JobControl>>> {
        // A poisoned lock means a thread panicked while inserting or removing
        // an entry; the map itself is still consistent, so keep using it.
        self.inner.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn worker(self, mut shutdown: watch::Receiver<bool>, threads: Arc<rayon::ThreadPool>) {
        loop {
            if *shutdown.borrow() {
                self.inner.stopping.store(true, Ordering::Relaxed);
                self.inner.notify.notify_waiters();
                return;
            }
            match store::jobs::claim(&self.inner.pool).await {
                Ok(Some(job)) => {
                    // There may be more: let another idle worker look.
                    self.inner.notify.notify_one();
                    let span = info_span!("job", job_id = %job.id, dataset_id = %job.dataset_id);
                    self.run(job, &threads).instrument(span).await;
                    continue;
                }
                Ok(None) => {
                    // Idle: take over the jobs of dead processes.
                    match store::jobs::requeue_expired(&self.inner.pool, self.inner.lease).await {
                        Ok(0) => {}
                        Ok(n) => {
                            info!(
                                jobs = n,
                                "re-queued jobs whose lease expired; they re-run under their charges"
                            );
                            continue;
                        }
                        Err(e) => error!(error = %e, "re-queueing expired jobs failed"),
                    }
                }
                Err(e) => error!(error = %e, "claiming a job failed"),
            }
            tokio::select! {
                _ = self.inner.notify.notified() => {}
                _ = shutdown.changed() => {}
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
            }
        }
    }

    /// Run one claimed job to a final state (or back to the queue on shutdown).
    async fn run(&self, job: ClaimedJob, threads: &Arc<rayon::ThreadPool>) {
        let control = Arc::new(JobControl::default());
        control
            .cancel
            .store(job.cancel_requested, Ordering::Relaxed);
        self.lock_running().insert(job.id.clone(), control.clone());
        let outcome = self.train(&job, &control, threads.clone()).await;
        let rounds = control.rounds_done.load(Ordering::Relaxed);
        let result = match outcome {
            Ok(()) => {
                info!("job succeeded");
                Ok(())
            }
            Err(Failure::LostLease) => {
                warn!("the job's lease was lost to another worker; this run released nothing");
                Ok(())
            }
            Err(Failure::Unsaved(e)) => {
                error!(error = %e, "the trained model could not be saved: the database stayed unavailable; the job re-runs under its charge when its lease expires");
                Ok(())
            }
            Err(Failure::Cancelled)
                if self.inner.stopping.load(Ordering::Relaxed)
                    && !control.cancel.load(Ordering::Relaxed) =>
            {
                info!("job interrupted by shutdown; it will re-run under its charge");
                store::jobs::requeue(&self.inner.pool, &job).await
            }
            Err(Failure::Cancelled) => {
                info!("job cancelled");
                store::jobs::finish(
                    &self.inner.pool,
                    &job,
                    "cancelled",
                    rounds,
                    "cancelled while running; the charge is kept",
                )
                .await
            }
            Err(Failure::DatasetGone) => {
                store::jobs::finish(
                    &self.inner.pool,
                    &job,
                    "failed",
                    rounds,
                    "the dataset's rows were deleted",
                )
                .await
            }
            Err(Failure::NotStorable(e)) => {
                // Nothing was stored. The rows were read, so the charge is
                // final (SPEC: a charge is final once the job may have read
                // the rows; docs/privacy.md, "Models that cannot be stored").
                error!(error = %e, job_id = %job.id, "the trained model was not finite; not stored");
                store::jobs::finish(
                    &self.inner.pool,
                    &job,
                    "failed",
                    rounds,
                    "the trained model had a number that is not finite and was not stored; the charge is kept",
                )
                .await
            }
            Err(Failure::Internal(e)) => {
                // The cause goes to the log only; the job record gets fixed
                // text (an error could in principle depend on the data).
                error!(error = %e, "job failed");
                store::jobs::finish(
                    &self.inner.pool,
                    &job,
                    "failed",
                    rounds,
                    "internal error during training",
                )
                .await
            }
        };
        if let Err(e) = result {
            error!(error = %e, "recording the job's outcome failed");
        }
        self.lock_running().remove(&job.id);
    }

    async fn train(
        &self,
        job: &ClaimedJob,
        control: &Arc<JobControl>,
        threads: Arc<rayon::ThreadPool>,
    ) -> Result<(), Failure> {
        let Some((schema_json, data)) = store::datasets::load_rows(&self.inner.pool, job).await?
        else {
            return Err(Failure::DatasetGone);
        };
        let params = JobParams::from_stored(&job.params_json)
            .map_err(|e| Failure::Internal(format!("stored parameters: {e}")))?;
        let job_id = job.id.clone();
        let charged = job.charge;
        let control = control.clone();
        let inner = self.inner.clone();
        let lost = Arc::new(AtomicBool::new(false));
        let trainer = control.clone();
        // CPU-bound: a blocking thread, never the executor.
        let mut handle = tokio::task::spawn_blocking(move || -> Result<(String, u32), Failure> {
            let control = trainer;
            let schema =
                Schema::from_json(&schema_json).map_err(|e| Failure::Internal(e.to_string()))?;
            let encoder = Encoder::new(&schema).map_err(|e| Failure::Internal(e.to_string()))?;
            // The stored rows carry no one-hot groups: they come from the schema.
            let data = Dataset {
                one_hot_groups: encoder.one_hot_groups().to_vec(),
                ..data
            };
            // The same plan the admission charged: parameters and n are
            // unchanged since, so it cannot fail here except on corruption.
            let mut plan = params.spec.plan(
                params.budget()?,
                PublicFacts::new(&encoder, data.n_rows()).with_local_dp(params.local_dp),
            )?;
            // The stored spec is the resolved one (every default filled in),
            // so re-planning it always says "given": whether the default
            // rule chose the parameters was decided at admission and is
            // stored with the job (the model said `false` where the job said
            // `true`, issue 29).
            plan.defaults_used = params.defaults_used;
            // Never run with more than was charged: the plan's own charge
            // (its cost rounded up to units) must be covered by the one in
            // the ledger. It is the same plan unless the code that plans it
            // changed since the admission (an upgrade with jobs queued).
            let cost = Charge::of(&Loss::of(&plan.cost))
                .map_err(|e| Failure::Internal(format!("the plan's cost: {e}")))?;
            if !charged.covers(&cost) {
                return Err(Failure::Internal(format!(
                    "the plan costs {cost:?}, more than the job's charge {charged:?}; not run"
                )));
            }
            let mut noise = NoiseRng::from_os().map_err(|e| Failure::Internal(e.to_string()))?;
            let mut on_round = |done: u32| {
                control.rounds_done.store(done, Ordering::Relaxed);
                !control.cancel.load(Ordering::Relaxed) && !inner.stopping.load(Ordering::Relaxed)
            };
            // The learners' parallel parts run on this worker's pool only.
            let mut model =
                threads.install(|| plan.fit(&data, &encoder, &mut noise, &mut on_round))?;
            model.set_job_id(job_id);
            Ok((model.to_json(), plan.steps))
        });
        // While it trains: renew the lease, publish the progress (rounds
        // done only) and pick up cancellations made by any process.
        let mut beat = tokio::time::interval(heartbeat_interval(self.inner.lease));
        beat.tick().await;
        let result = loop {
            tokio::select! {
                result = &mut handle => break result,
                _ = beat.tick() => {
                    let rounds = control.rounds_done.load(Ordering::Relaxed);
                    match store::jobs::heartbeat(&self.inner.pool, job, rounds).await {
                        Ok(Some(cancel)) => {
                            if cancel {
                                control.cancel.store(true, Ordering::Relaxed);
                            }
                        }
                        Ok(None) => {
                            // Another worker owns the job now: stop, record nothing.
                            lost.store(true, Ordering::Relaxed);
                            control.cancel.store(true, Ordering::Relaxed);
                        }
                        Err(e) => warn!(error = %e, "renewing the job's lease failed"),
                    }
                }
            }
        };
        if lost.load(Ordering::Relaxed) {
            return Err(Failure::LostLease);
        }
        let (model_json, tau) =
            result.map_err(|e| Failure::Internal(format!("training thread: {e}")))??;
        let model_id = store::new_id("model");
        // Charged and trained: a database that is down or stalled must not
        // turn this into a failed job that keeps its charge (issue 26, item
        // 8). Retry for up to one lease; if the database is still away, the
        // job stays `running` and its lease expires, so it is re-queued and
        // re-run under its one charge, as after a crash.
        let pool = &self.inner.pool;
        let saved = retry_transient(self.inner.lease, FIRST_RETRY, || {
            store::jobs::succeed(pool, job, &model_id, &model_json, tau)
        })
        .await;
        match saved {
            Ok(true) => Ok(()),
            Ok(false) => Err(Failure::LostLease),
            Err(e) if e.is_transient() => Err(Failure::Unsaved(e.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    /// Mark shutdown: running trainings stop at their next round.
    pub fn stop(&self) {
        self.inner.stopping.store(true, Ordering::Relaxed);
        let running = self.lock_running().len();
        if running > 0 {
            warn!(
                jobs = running,
                "shutdown: stopping running jobs; they re-run after restart"
            );
        }
    }
}

/// The first wait of [`retry_transient`] in the service.
const FIRST_RETRY: Duration = Duration::from_millis(250);

/// Run `op` until it succeeds, fails with an error that is not transient
/// ([`StoreError::is_transient`]), or `limit` has passed; waits between
/// tries double from `first` to at most 5 s. Returns the last outcome.
async fn retry_transient<T, F, Fut>(
    limit: Duration,
    first: Duration,
    mut op: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    let mut wait = first;
    loop {
        match op().await {
            Err(e) if e.is_transient() && tokio::time::Instant::now() + wait < deadline => {
                warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "the database is unavailable; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            outcome => return outcome,
        }
    }
}

/// Why a job did not succeed.
enum Failure {
    /// Another worker re-claimed the job (this one was presumed dead).
    LostLease,
    /// Trained, but the database stayed unavailable while saving the model:
    /// nothing is recorded; the lease expires and the job re-runs under its
    /// charge.
    Unsaved(String),
    Cancelled,
    DatasetGone,
    /// The learner's model failed `Model::check_storable`.
    NotStorable(String),
    Internal(String),
}

impl From<LearnError> for Failure {
    fn from(e: LearnError) -> Failure {
        match e {
            LearnError::Cancelled => Failure::Cancelled,
            e @ LearnError::NotFinite(_) => Failure::NotStorable(e.to_string()),
            other => Failure::Internal(other.to_string()),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Internal(e.to_string())
    }
}

/// Worker `n`'s training pool of `threads` threads (at least 1). Building a
/// pool fails only if the OS refuses to start threads; the error is logged
/// and a pool of one thread tried instead.
fn training_pool(n: usize, threads: usize) -> Arc<rayon::ThreadPool> {
    let build = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("privboost-train-{n}-{i}"))
            .build()
    };
    let pool = build(threads.max(1)).unwrap_or_else(|e| {
        error!(error = %e, threads, "cannot start the training threads; using one");
        // Invariant: a process that runs at all can start one thread.
        build(1).expect("one training thread")
    });
    Arc::new(pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{LabelMode, read_csv};
    use crate::learn::AlgorithmSpec;
    use crate::privacy::budget_units::{self, EpsilonUnits};
    use crate::privacy::filter::Accounting;
    use crate::store::datasets::{self, Created, NewDataset};
    use crate::store::idempotency::StoredResponse;
    use crate::store::jobs::{NewJob, Submitted};
    use crate::store::keys::{self, Role};

    const SCHEMA: &str = r#"{
      "label": {"column": "y", "positive": "1", "negative": "0"},
      "columns": [{"name": "c", "type": "categorical", "categories": ["a", "b"]}]
    }"#;

    /// A database hiccup while saving is retried; an error that is not
    /// transient, or one that outlasts the limit, ends the retries.
    #[tokio::test]
    async fn saving_retries_transient_errors_only() {
        let ms = Duration::from_millis;
        let tries = std::cell::Cell::new(0);
        let flaky = || {
            tries.set(tries.get() + 1);
            let n = tries.get();
            async move {
                if n < 4 {
                    Err(StoreError::Sqlx(sqlx::Error::PoolTimedOut))
                } else {
                    Ok(n)
                }
            }
        };
        assert_eq!(retry_transient(ms(60_000), ms(1), flaky).await.unwrap(), 4);
        tries.set(0);
        let broken = || {
            tries.set(tries.get() + 1);
            async { Err::<(), _>(StoreError::Corrupt("x".into())) }
        };
        assert!(retry_transient(ms(60_000), ms(1), broken).await.is_err());
        assert_eq!(tries.get(), 1, "not transient: no retry");
        tries.set(0);
        let down = || {
            tries.set(tries.get() + 1);
            async { Err::<(), _>(StoreError::Sqlx(sqlx::Error::PoolTimedOut)) }
        };
        // A limit shorter than the first wait: one try, and its error.
        let e = retry_transient(ms(5), ms(10), down).await.unwrap_err();
        assert!(e.is_transient());
        assert_eq!(tries.get(), 1);
    }

    fn respond(_: &impl serde::Serialize) -> StoredResponse {
        StoredResponse {
            status: 200,
            location: None,
            body: String::new(),
        }
    }

    /// The worker runs a job only if the ledger's charge covers the plan it
    /// makes from the stored parameters: a job admitted with a charge below
    /// its plan's cost (as if planned by other code before an upgrade)
    /// fails without training or releasing a model, while the same job
    /// charged its plan's cost succeeds.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_job_never_runs_above_its_charge() {
        let dir = tempfile::tempdir().unwrap();
        let db = store::testing::fresh_sqlite(dir.path(), 4).await;
        let owner = keys::create(&db, Role::Owner, "o", "secret").await.unwrap();
        let schema = Schema::from_json(SCHEMA).unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let mut csv = String::from("c,y\n");
        for i in 0..60 {
            csv.push_str(if i % 3 == 0 { "a,1\n" } else { "b,0\n" });
        }
        let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
        let new = NewDataset {
            owner_id: &owner.id,
            name: "d",
            schema_json: SCHEMA,
            data: &data,
            rejected_rows: 0,
            total: budget_units::total(10.0, 0.0).unwrap(),
            accounting: Accounting::Basic,
            local_dp: None,
            content_digest: "",
            allow_duplicate: true,
        };
        let Created::New(d) = datasets::create(&db, new, None, respond).await.unwrap() else {
            panic!("created")
        };
        // A LazyBB job of epsilon 1: its plan costs pure 1, 1e12 units.
        let params = JobParams {
            spec: AlgorithmSpec::default(),
            epsilon: 1.0,
            delta: 0.0,
            defaults_used: true,
            binning: None,
            local_dp: None,
        };
        let plan = params
            .spec
            .plan(params.budget().unwrap(), PublicFacts::new(&encoder, 60))
            .unwrap();
        let params_json = serde_json::to_string(&params).unwrap();
        let mut ids = Vec::new();
        for charged in [0.5, 1.0] {
            let new = NewJob {
                dataset_id: &d.id,
                submitted_by: &owner.id,
                params_json: &params_json,
                tau: plan.steps,
                charge: Charge::pure(EpsilonUnits::nearest(charged).unwrap()).unwrap(),
                max_active_per_key: 10,
            };
            let Submitted::New(job) = store::jobs::submit(&db, new, None, respond).await.unwrap()
            else {
                panic!("admitted")
            };
            ids.push(job.id);
        }
        let (stop, shutdown) = watch::channel(false);
        let (_queue, workers) = JobQueue::start(db.clone(), 1, 1, DEFAULT_LEASE, shutdown);
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        let states = loop {
            let mut states = Vec::new();
            for id in &ids {
                let job = store::jobs::get_visible(&db, id, &owner.id)
                    .await
                    .unwrap()
                    .unwrap();
                states.push((job.state, job.model_id.is_some()));
            }
            if states.iter().all(|(s, _)| s != "queued" && s != "running") {
                break states;
            }
            assert!(std::time::Instant::now() < deadline, "{states:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        stop.send(true).unwrap();
        workers.join().await;
        assert_eq!(
            states,
            [("failed".to_owned(), false), ("succeeded".to_owned(), true)]
        );
        db.close().await;
    }
}
