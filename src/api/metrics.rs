//! Prometheus metrics: request counts and latencies by route, recorded by a
//! middleware; jobs by state and budget spent, read from the store at scrape
//! time. Only aggregate numbers: no dataset ids, no values.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::AppState;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Counters, behind one mutex: held for a few map operations per request,
/// never across an await.
#[derive(Default)]
pub(crate) struct Metrics {
    inner: Mutex<Inner>,
}

/// Counters by method, then route (the order the text format lists them
/// in); looked up by `&str`, so a request allocates only the first time its
/// method and route are seen.
#[derive(Default)]
struct Inner {
    by_method: BTreeMap<String, BTreeMap<String, RouteStats>>,
}

#[derive(Default)]
struct RouteStats {
    /// status -> count.
    statuses: BTreeMap<u16, u64>,
    latency: Histogram,
}

/// Middleware: count and time each request by its matched route.
pub(crate) async fn record(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let start = Instant::now();
    let response = next.run(req).await;
    let seconds = start.elapsed().as_secs_f64();
    let status = response.status().as_u16();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let mut m = state
        .metrics
        .inner
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let routes = match m.by_method.get_mut(method.as_str()) {
        Some(routes) => routes,
        None => m.by_method.entry(method.as_str().to_owned()).or_default(),
    };
    let stats = match routes.get_mut(route) {
        Some(stats) => stats,
        None => routes.entry(route.to_owned()).or_default(),
    };
    *stats.statuses.entry(status).or_default() += 1;
    let h = &mut stats.latency;
    h.count += 1;
    h.sum += seconds;
    for (i, le) in BUCKETS.iter().enumerate() {
        if seconds <= *le {
            h.counts[i] += 1;
        }
    }
    response
}

impl Metrics {
    /// The request metrics in Prometheus text format.
    pub(crate) fn render(&self, out: &mut String) {
        let m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str(
            "# HELP privboost_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE privboost_http_requests_total counter\n");
        for (method, routes) in &m.by_method {
            for (route, stats) in routes {
                for (status, n) in &stats.statuses {
                    let _ = writeln!(
                        out,
                        "privboost_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
                    );
                }
            }
        }
        out.push_str("# HELP privboost_http_request_duration_seconds HTTP request latency by method and route.\n");
        out.push_str("# TYPE privboost_http_request_duration_seconds histogram\n");
        let latencies = m.by_method.iter().flat_map(|(method, routes)| {
            routes
                .iter()
                .map(move |(route, s)| (method, route, &s.latency))
        });
        for (method, route, h) in latencies {
            let labels = format!("method=\"{method}\",route=\"{route}\"");
            for (le, c) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    out,
                    "privboost_http_request_duration_seconds_bucket{{{labels},le=\"{le}\"}} {c}"
                );
            }
            let _ = writeln!(
                out,
                "privboost_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "privboost_http_request_duration_seconds_sum{{{labels}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "privboost_http_request_duration_seconds_count{{{labels}}} {}",
                h.count
            );
        }
    }
}
