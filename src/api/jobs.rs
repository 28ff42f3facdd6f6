//! Training jobs: submit (validate everything, then admit the charge and
//! queue), estimate (the charge and noise a job would get; spends nothing),
//! list, status with progress (rounds done of tau), progress as
//! server-sent events, cancel.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::auth::Caller;
use super::error::{ApiError, AppJson, AppQuery, FieldError};
use super::{
    AppState, MAX_EPSILON, PageQuery, Routes, datasets::visible, idempotency_key, replay, to_json,
};
use crate::data::Schema;
use crate::jobs::JobParams;
use crate::learn::{AlgorithmName, AlgorithmSpec, Plan, PublicFacts};
use crate::privacy::Budget;
use crate::privacy::budget_units::Requested;
use crate::privacy::filter::{Accounting, Charge, Loss};
use crate::store::datasets::DatasetInfo;
use crate::store::idempotency::{IdemRequest, StoredResponse};
use crate::store::jobs::{self, Cancelled, JobRecord, NewJob, Submitted};
use crate::store::keys::Role;
use crate::store::ledger::{self, Amount};

pub(super) fn routes(r: Routes) -> Routes {
    r.at(Method::POST, "/v1/jobs", submit)
        .at(Method::GET, "/v1/jobs", list)
        .at(Method::POST, "/v1/jobs/estimate", estimate)
        .at(Method::GET, "/v1/jobs/{id}", get)
        .at(Method::GET, "/v1/jobs/{id}/events", events)
        .at(Method::POST, "/v1/jobs/{id}/cancel", cancel)
}

/// The body of `POST /v1/jobs` and `POST /v1/jobs/estimate`: the dataset,
/// the budget, the algorithm, and that algorithm's parameters as flat fields
/// (`AlgorithmSpec::from_fields` checks them: a parameter of another
/// algorithm is refused by name, an unknown field as `body`).
#[derive(Debug, Deserialize)]
struct JobRequest {
    dataset_id: String,
    /// Total epsilon of the job; required unless the dataset is local_dp
    /// (then refused: nothing central is spent).
    epsilon: Option<f64>,
    /// Total delta (0: pure DP; > 0: advanced composition or zCDP).
    #[serde(default)]
    delta: f64,
    /// `lazybb` (default; `ldp-naive-bayes` on sampled-column local-DP
    /// datasets).
    algorithm: Option<AlgorithmName>,
    /// Accepted only to refuse it clearly (SPEC §2).
    seed: Option<Value>,
    /// Accepted only to refuse `false` clearly.
    private: Option<bool>,
    /// The learner's parameters.
    #[serde(flatten)]
    params: Map<String, Value>,
}

/// Check the request's own fields, before any access or budget check. The
/// budget comes back quantised to the ledger's units (`Requested`): what a
/// plain run is charged, and the doubles it runs at.
fn check(req: &JobRequest) -> Result<(AlgorithmSpec, Option<Requested>), ApiError> {
    let mut errors = Vec::new();
    if req.seed.is_some() {
        errors.push(FieldError::new(
            "seed",
            "a private job takes no seed: noise comes from the operating system's CSPRNG (a known seed would let anyone remove the noise)",
        ));
    }
    if req.private == Some(false) {
        errors.push(FieldError::new(
            "private",
            "the service only runs differentially private jobs",
        ));
    }
    let budget = match req.epsilon {
        None => Some(None),
        Some(epsilon) if epsilon > MAX_EPSILON => {
            errors.push(FieldError::new(
                "epsilon",
                format!("must be at most {MAX_EPSILON}"),
            ));
            None
        }
        Some(epsilon) => match Requested::new(epsilon, req.delta) {
            Ok(b) => Some(Some(b)),
            Err(e) => {
                let field = if e.to_string().contains("delta") {
                    "delta"
                } else {
                    "epsilon"
                };
                errors.push(FieldError::new(field, e.to_string()));
                None
            }
        },
    };
    let spec = AlgorithmSpec::from_fields(req.algorithm.unwrap_or_default(), req.params.clone())
        .map_err(|problems| {
            errors.extend(
                problems
                    .into_iter()
                    .map(|p| FieldError::new(p.field, p.message)),
            );
        });
    match (budget, spec) {
        (Some(budget), Ok(spec)) if errors.is_empty() => Ok((spec, budget)),
        _ => Err(ApiError::Validation(errors)),
    }
}

/// Parse and check a request body; the dataset must be visible and ready;
/// the plan (cost, noise) is computed from public facts only, at the run
/// budget (the doubles not above the charged units), and so is its charge.
async fn prepare(
    state: &AppState,
    caller: &Caller,
    body: Value,
) -> Result<(JobParams, Plan, Charge, DatasetInfo), ApiError> {
    caller.require(&[Role::Owner, Role::Analyst], "training")?;
    let req: JobRequest = serde_json::from_value(body)
        .map_err(|e| ApiError::Validation(vec![FieldError::new("body", e.to_string())]))?;
    let (spec, budget) = check(&req)?;
    let dataset = visible(state, caller, &req.dataset_id).await?;
    // On sampled-column reports the default learner is the one that reads
    // them (every other is refused there).
    let sampled = dataset
        .local_dp
        .is_some_and(|l| l.protocol == crate::local_dp::Protocol::SampledColumn);
    let spec = if sampled && req.algorithm.is_none() {
        AlgorithmSpec::from_fields(AlgorithmName::LdpNaiveBayes, req.params.clone()).map_err(
            |problems| {
                ApiError::Validation(
                    problems
                        .into_iter()
                        .map(|p| FieldError::new(p.field, p.message))
                        .collect(),
                )
            },
        )?
    } else {
        spec
    };
    if dataset.state != "ready" {
        return Err(ApiError::Conflict("the dataset was deleted".into()));
    }
    let n = usize::try_from(dataset.n_rows).map_err(|_| ApiError::Internal("row count".into()))?;
    // A schema stored before a check the upload makes today (e.g. label
    // bounds that overflow, issue 26) is refused here, before any charge.
    let schema = Schema::from_json(&dataset.schema.to_string()).map_err(|e| {
        ApiError::Validation(vec![FieldError::new(
            "dataset_id",
            format!("the dataset's schema is no longer accepted: {e}"),
        )])
    })?;
    let encoder = crate::data::Encoder::new(&schema)
        .map_err(|e| ApiError::Internal(format!("stored schema: {e}")))?;
    // A local-DP dataset: the job is post-processing of the randomized rows
    // and spends nothing centrally, so it takes no epsilon; any other needs one.
    let (budget, asked) = match (dataset.local_dp, budget) {
        (Some(local), None) => (
            Budget::new(local.epsilon, 0.0)
                .map_err(|e| ApiError::Internal(format!("stored local_dp: {e}")))?,
            Amount::ZERO,
        ),
        (Some(local), Some(_)) => {
            return Err(ApiError::Validation(vec![FieldError::new(
                "epsilon",
                format!(
                    "this dataset was randomized on the client ({}-local DP, local_dp): its jobs are post-processing and spend no central budget; leave epsilon and delta out",
                    local.epsilon
                ),
            )]));
        }
        (None, Some(requested)) => (requested.run, requested.asked),
        (None, None) => {
            return Err(ApiError::Validation(vec![FieldError::new(
                "epsilon",
                "required: the job's total privacy budget",
            )]));
        }
    };
    let facts = PublicFacts::new(&encoder, n).with_local_dp(dataset.local_dp);
    let plan = spec.plan(budget, facts).map_err(|e| {
        // Name the field as the request spelled it (a deprecated alias too).
        let field = e.field();
        let field = req
            .algorithm
            .unwrap_or_default()
            .deprecated_aliases()
            .iter()
            .find(|(alias, name)| *name == field && req.params.contains_key(*alias))
            .map_or(field, |(alias, _)| alias);
        ApiError::Validation(vec![FieldError::new(field, e.to_string())])
    })?;
    // A zCDP-filter dataset composes every charge by its rho (or, all pure,
    // by basic composition): an (epsilon, delta) from a composition theorem
    // over pure steps has neither, so say so before anything is charged.
    if dataset.accounting == Accounting::ZcdpFilter.as_str()
        && matches!(Loss::of(&plan.cost), Loss::Approx { .. })
    {
        return Err(ApiError::Validation(vec![FieldError::new(
            "delta",
            "this dataset uses zcdp-filter accounting, which admits pure-DP (delta = 0) and zCDP runs only; this run's (epsilon, delta) comes from a composition theorem with no zCDP description (LazyBB with delta > 0 and enough rounds that advanced composition beats basic, or auto with delta > 0 choosing among several learners): use delta = 0, or a zCDP learner (dp-ebm, or dp-linear with delta > 0)",
        )]));
    }
    // What the ledger charges: the plan's cost rounded up to units (0 for a
    // local-DP run, `Loss::of`). For a plain run at the run budget this is
    // exactly the asked amount; a composition (private bins) may prove a
    // little more, and then that is charged.
    let charge = Charge::of(&Loss::of(&plan.cost))
        .map_err(|e| ApiError::Validation(vec![FieldError::new("epsilon", e.to_string())]))?;
    // The parameters keep the asked amounts (the nearest doubles of their
    // units), from which the worker derives the same run budget again.
    let params = JobParams {
        spec: plan.resolved,
        epsilon: asked.epsilon.to_f64(),
        delta: asked.delta.to_f64(),
        defaults_used: plan.defaults_used,
        binning: plan.binning.as_ref().map(|b| b.summary()),
        local_dp: dataset.local_dp,
    };
    Ok((params, plan, charge, dataset))
}

/// A job as JSON, with live progress when it runs in this process.
///
/// Unless `precise` (the dataset's owner or an admin,
/// [`super::sees_precise_times`]), times are whole seconds and a running
/// job's progress moves in quarters (docs/privacy.md, "Timing").
fn job_json(state: &AppState, job: &JobRecord, precise: bool) -> Result<Value, ApiError> {
    let mut v = to_json(job)?;
    let running = job.state == "running";
    let mut rounds = match job.state.as_str() {
        "running" => state.jobs.progress(&job.id).unwrap_or(job.rounds_done),
        _ => job.rounds_done,
    };
    if !precise {
        rounds = super::coarse_rounds(rounds, job.tau, running);
        for field in ["created_at", "started_at", "finished_at"] {
            super::coarsen_time(&mut v[field]);
        }
    }
    v["rounds_done"] = json!(rounds);
    v["progress"] = json!({ "rounds_done": rounds, "tau": job.tau });
    Ok(v)
}

async fn submit(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    AppJson(body): AppJson<Value>,
) -> Result<Response, ApiError> {
    let idem_key = idempotency_key(&headers)?;
    // serde_json's map is sorted, so the hash ignores key order.
    let canonical = body.to_string();
    let (params, plan, charge, dataset) = prepare(&state, &caller, body).await?;
    let precise = caller.role == Role::Admin || dataset.owner_id == caller.id;
    let idem = idem_key
        .map(|k| IdemRequest::new(&caller.id, &k, "POST", "/v1/jobs", canonical.as_bytes()));
    let params_json =
        serde_json::to_string(&params).map_err(|e| ApiError::Internal(e.to_string()))?;
    let outcome = jobs::submit(
        &state.pool,
        NewJob {
            dataset_id: &dataset.id,
            submitted_by: &caller.id,
            params_json: &params_json,
            tau: plan.steps,
            charge,
            max_active_per_key: state.config.max_active_jobs_per_key,
        },
        idem.as_ref(),
        |job| StoredResponse {
            status: 202,
            location: Some(format!("/v1/jobs/{}", job.id)),
            body: job_json(&state, job, precise)
                .map(|v| v.to_string())
                .unwrap_or_default(),
        },
    )
    .await?;
    match outcome {
        Submitted::New(job) => {
            state.jobs.wake();
            Ok((
                StatusCode::ACCEPTED,
                [
                    (header::LOCATION, format!("/v1/jobs/{}", job.id)),
                    (header::RETRY_AFTER, "1".to_owned()),
                ],
                axum::Json(job_json(&state, &job, precise)?),
            )
                .into_response())
        }
        Submitted::Replay(r) => Ok(replay(r)),
        Submitted::Mismatch => Err(ApiError::IdempotencyMismatch),
        Submitted::OverBudget { requested, budget } => Err(ApiError::BudgetExceeded {
            requested,
            remaining: budget.remaining,
            filter: budget.filter,
        }),
        Submitted::TooManyActive => Err(ApiError::TooManyRequests(format!(
            "this key already has {} queued or running jobs",
            state.config.max_active_jobs_per_key
        ))),
        Submitted::DatasetGone => Err(ApiError::Conflict("the dataset was deleted".into())),
    }
}

async fn estimate(
    State(state): State<AppState>,
    caller: Caller,
    AppJson(body): AppJson<Value>,
) -> Result<impl IntoResponse, ApiError> {
    let (params, plan, charge, dataset) = prepare(&state, &caller, body).await?;
    let budget = ledger::budget(&state.pool, &dataset.id).await?;
    Ok(axum::Json(json!({
        "dataset_id": dataset.id,
        "charge": charge.basic(),
        "params": params,
        "cost": plan.cost,
        "noise": plan.noise(),
        "admissible": budget.admits(&charge),
        "budget": budget,
    })))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let (after, size) = q.cursor()?;
    let page = jobs::list_visible(&state.pool, &caller.id, after, size).await?;
    let mut precise = std::collections::HashMap::new();
    let mut items = Vec::with_capacity(page.items.len());
    for j in &page.items {
        let p = match precise.get(&j.dataset_id) {
            Some(&p) => p,
            None => {
                let p = super::sees_precise_times(&state, &caller, &j.dataset_id).await?;
                precise.insert(j.dataset_id.clone(), p);
                p
            }
        };
        items.push(job_json(&state, j, p)?);
    }
    Ok(axum::Json(json!({
        "items": items,
        "next_page_token": page.next_after.map(|s| format!("after-{s}")),
    })))
}

async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let job = jobs::get_visible(&state.pool, &id, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("job"))?;
    let precise = super::sees_precise_times(&state, &caller, &job.dataset_id).await?;
    Ok(axum::Json(job_json(&state, &job, precise)?))
}

async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = jobs::get_visible(&state.pool, &id, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("job"))?;
    if job.submitted_by != caller.id {
        let dataset = visible(&state, &caller, &job.dataset_id).await?;
        if dataset.owner_id != caller.id {
            return Err(ApiError::Forbidden(
                "only the submitter or the dataset's owner can cancel a job".into(),
            ));
        }
    }
    let precise = super::sees_precise_times(&state, &caller, &job.dataset_id).await?;
    match jobs::cancel(&state.pool, &id, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("job"))?
    {
        Cancelled::Refunded(job) | Cancelled::Stopped(job) => {
            Ok(axum::Json(job_json(&state, &job, precise)?).into_response())
        }
        Cancelled::Requested(job) => {
            state.jobs.cancel(&id);
            Ok((
                StatusCode::ACCEPTED,
                axum::Json(job_json(&state, &job, precise)?),
            )
                .into_response())
        }
        Cancelled::AlreadyFinal(job) => Err(ApiError::Conflict(format!(
            "the job already ended ({})",
            job.state
        ))),
    }
}

/// How often an event stream looks at its job: for the dataset's owner and
/// admins, often enough to follow every round; for everyone else once a
/// second, no finer than the whole-second times they see (docs/privacy.md,
/// "Timing"), so the stream tells them nothing that polling would not.
const EVENTS_TICK_PRECISE: std::time::Duration = std::time::Duration::from_millis(250);
const EVENTS_TICK_COARSE: std::time::Duration = std::time::Duration::from_secs(1);

/// The event name of a job's state: `progress` while it is queued or
/// running, then `done`, `failed` or `cancelled`, after which the stream
/// ends.
fn event_name(state: &str) -> Option<&'static str> {
    match state {
        "succeeded" => Some("done"),
        "failed" => Some("failed"),
        "cancelled" => Some("cancelled"),
        _ => None,
    }
}

/// Where an event stream is.
struct EventStream {
    state: AppState,
    caller: Caller,
    id: String,
    precise: bool,
    tick: std::time::Duration,
    /// The last job document sent (an event is sent when it changes).
    last: Option<Value>,
    ended: bool,
}

impl EventStream {
    /// The next event, or `None` when the stream ends (the job ended, it is
    /// no longer visible, or the server stops).
    async fn next(&mut self) -> Option<axum::response::sse::Event> {
        use axum::response::sse::Event;
        if self.ended {
            return None;
        }
        loop {
            let job = match jobs::get_visible(&self.state.pool, &self.id, &self.caller.id).await {
                Ok(Some(job)) => job,
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!(error = %e, "job event stream");
                    return None;
                }
            };
            let doc = job_json(&self.state, &job, self.precise).ok()?;
            let name = event_name(&job.state);
            if name.is_some() || self.last.as_ref() != Some(&doc) {
                self.ended = name.is_some();
                let event = Event::default()
                    .event(name.unwrap_or("progress"))
                    .json_data(&doc)
                    .ok()?;
                self.last = Some(doc);
                return Some(event);
            }
            let mut shutdown = self.state.shutdown.clone();
            tokio::select! {
                () = tokio::time::sleep(self.tick) => {}
                _ = shutdown.wait_for(|stop| *stop) => return None,
            }
        }
    }
}

/// `GET /v1/jobs/{id}/events`: the job's progress as server-sent events,
/// with the same document and the same access as `GET /v1/jobs/{id}`
/// (coarse times and progress for non-owners). The first event is the
/// current state; a stream opened after the job ended sends that final
/// event and ends.
async fn events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = jobs::get_visible(&state.pool, &id, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("job"))?;
    let precise = super::sees_precise_times(&state, &caller, &job.dataset_id).await?;
    let stream = EventStream {
        state,
        caller,
        id,
        precise,
        tick: if precise {
            EVENTS_TICK_PRECISE
        } else {
            EVENTS_TICK_COARSE
        },
        last: None,
        ended: false,
    };
    let events = futures_util::stream::unfold(stream, |mut s| async move {
        s.next()
            .await
            .map(|e| (Ok::<_, std::convert::Infallible>(e), s))
    });
    Ok((
        [(header::CACHE_CONTROL, "no-store")],
        axum::response::sse::Sse::new(events).keep_alive(axum::response::sse::KeepAlive::default()),
    )
        .into_response())
}
