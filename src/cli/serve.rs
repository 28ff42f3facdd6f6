//! `privboost serve`: the REST service on one SQLite file (SPEC §6), or on
//! a PostgreSQL database shared by several replicas (`--database-url`,
//! docs/deploy.md).
//!
//! Start-up order: tracing, config, the store (WAL, migrations), the admin
//! key, recovery of interrupted jobs, the workers, bind, serve. Ctrl-C or
//! SIGTERM drains requests, stops running trainings between rounds (they
//! re-run after the next start under their existing charges) and waits for
//! the workers before exiting.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use super::log_writer::LogWriter;
use anyhow::Context;
use clap::Args;
use privboost::api::{self, Config, Server};
use tracing_subscriber::EnvFilter;

/// Options of `privboost serve`; each flag can also come from the
/// environment variable named after it.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "PRIVBOOST_BIND", default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Also serve `GET /metrics` without a key on this address (e.g.
    /// 127.0.0.1:9090 for a local Prometheus). Without it, `/metrics` is
    /// only on the main port and needs the admin key.
    #[arg(long, env = "PRIVBOOST_METRICS_BIND")]
    metrics_bind: Option<SocketAddr>,
    /// Directory of the SQLite file `privboost.db` (created if missing).
    /// Unused with --database-url.
    #[arg(long, env = "PRIVBOOST_DATA_DIR", default_value = "./privboost-data")]
    data_dir: PathBuf,
    /// Keep everything in this PostgreSQL database instead of the SQLite
    /// file (postgres://user:password@host:port/database): every replica
    /// started with the same URL shares one ledger, one job queue and the
    /// datasets (docs/deploy.md).
    #[arg(long, env = "PRIVBOOST_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// Training workers (trainings that run at once); default: the number of cores.
    #[arg(long, env = "PRIVBOOST_WORKERS")]
    workers: Option<usize>,
    /// Threads one training may use (each worker has its own pool, so at
    /// most workers x this many threads train at once). Results do not
    /// depend on it.
    #[arg(long, env = "PRIVBOOST_THREADS_PER_JOB", default_value_t = 1)]
    threads_per_job: usize,
    /// Admin API key to create if missing, instead of generating one on first start.
    #[arg(long, env = "PRIVBOOST_ADMIN_KEY", hide_env_values = true)]
    admin_key: Option<String>,
    /// Largest JSON request body, in bytes.
    #[arg(long, env = "PRIVBOOST_MAX_BODY_BYTES", default_value_t = api::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Largest dataset upload, in bytes.
    #[arg(long, env = "PRIVBOOST_MAX_UPLOAD_BYTES", default_value_t = api::DEFAULT_MAX_UPLOAD_BYTES)]
    max_upload_bytes: usize,
    /// Most rows in one dataset upload.
    #[arg(long, env = "PRIVBOOST_MAX_UPLOAD_ROWS", default_value_t = api::DEFAULT_MAX_UPLOAD_ROWS)]
    max_upload_rows: usize,
    /// Most rows in one prediction request.
    #[arg(long, env = "PRIVBOOST_MAX_PREDICT_ROWS", default_value_t = api::DEFAULT_MAX_PREDICT_ROWS)]
    max_predict_rows: usize,
    /// Most queued or running jobs per API key.
    #[arg(long, env = "PRIVBOOST_MAX_ACTIVE_JOBS", default_value_t = api::DEFAULT_MAX_ACTIVE_JOBS_PER_KEY)]
    max_active_jobs: u32,
    /// Time limit of one request, in seconds.
    #[arg(long, env = "PRIVBOOST_REQUEST_TIMEOUT", default_value_t = api::DEFAULT_REQUEST_TIMEOUT.as_secs())]
    request_timeout: u64,
    /// Seconds a client has to send a request's line and headers.
    #[arg(long, env = "PRIVBOOST_HEADER_READ_TIMEOUT", default_value_t = api::DEFAULT_HEADER_READ_TIMEOUT.as_secs())]
    header_read_timeout: u64,
    /// Requests per second per API key (0 turns the limit off, e.g. for benchmarks).
    #[arg(long, env = "PRIVBOOST_RATE_LIMIT", default_value_t = api::DEFAULT_RATE_LIMIT.per_second.get())]
    rate_limit: u32,
    /// Requests one key may send at once above the sustained rate.
    #[arg(long, env = "PRIVBOOST_RATE_BURST", default_value_t = api::DEFAULT_RATE_LIMIT.burst.get())]
    rate_burst: u32,
    /// Seconds after which a running job whose process stopped renewing its
    /// lease (it crashed) is re-queued.
    #[arg(long, env = "PRIVBOOST_JOB_LEASE", default_value_t = privboost::jobs::DEFAULT_LEASE.as_secs())]
    job_lease: u64,
    /// Log as JSON lines instead of text.
    #[arg(long, env = "PRIVBOOST_LOG_JSON")]
    log_json: bool,
}

impl ServeArgs {
    fn config(&self) -> anyhow::Result<Config> {
        anyhow::ensure!(self.workers != Some(0), "--workers must be at least 1");
        anyhow::ensure!(
            self.threads_per_job > 0,
            "--threads-per-job must be at least 1"
        );
        anyhow::ensure!(
            self.max_predict_rows > 0,
            "--max-predict-rows must be at least 1"
        );
        anyhow::ensure!(
            self.max_active_jobs > 0,
            "--max-active-jobs must be at least 1"
        );
        anyhow::ensure!(
            self.request_timeout > 0,
            "--request-timeout must be at least 1"
        );
        let mut c = Config::new(self.data_dir.join("privboost.db"));
        if let Some(url) = &self.database_url {
            privboost::store::Location::from_url(url).map_err(|e| anyhow::anyhow!("{e}"))?;
            c.database_url = Some(url.clone());
        }
        if let Some(w) = self.workers {
            c.workers = w;
        }
        c.threads_per_job = self.threads_per_job;
        c.admin_key = self.admin_key.clone();
        c.max_body_bytes = self.max_body_bytes;
        c.max_upload_bytes = self.max_upload_bytes;
        c.max_upload_rows = self.max_upload_rows;
        c.max_predict_rows = self.max_predict_rows;
        c.max_active_jobs_per_key = self.max_active_jobs;
        c.request_timeout = Duration::from_secs(self.request_timeout);
        anyhow::ensure!(
            self.header_read_timeout > 0,
            "--header-read-timeout must be at least 1"
        );
        c.header_read_timeout = Duration::from_secs(self.header_read_timeout);
        c.rate_limit = match (
            NonZeroU32::new(self.rate_limit),
            NonZeroU32::new(self.rate_burst),
        ) {
            (None, _) => None,
            (Some(per_second), Some(burst)) => Some(api::RateLimit { per_second, burst }),
            (Some(_), None) => anyhow::bail!("--rate-burst must be at least 1"),
        };
        anyhow::ensure!(
            self.job_lease >= 2,
            "--job-lease must be at least 2 seconds"
        );
        c.job_lease = Duration::from_secs(self.job_lease);
        Ok(c)
    }
}

/// Run the service until Ctrl-C or SIGTERM.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!("{}=info,tower_http=info", env!("CARGO_CRATE_NAME")))
    });
    // Lines go to stderr from a writer thread, not from the request's
    // thread (`log_writer`); flushed before the process exits.
    let writer = LogWriter::stderr().context("starting the log writer")?;
    if args.log_json {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer.clone())
            .json()
            .init();
    } else {
        // Colours only on a terminal: a log file or a collector gets plain
        // text, not escape codes.
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer.clone())
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    let result = serve(args);
    writer.flush();
    result
}

/// [`run`] once logging is set up.
fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    if config.database_url.is_none() {
        std::fs::create_dir_all(&args.data_dir)
            .with_context(|| format!("creating the data directory {}", args.data_dir.display()))?;
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        // What the logs and errors name: the file, or the database without
        // its password.
        let db = match &config.database_url {
            Some(url) => privboost::store::describe_url(url),
            None => config.db_path.display().to_string(),
        };
        let server = Server::open(config)
            .await
            .with_context(|| format!("opening {db}"))?;
        if let Some(key) = &server.new_admin_key {
            // Printed once, to stdout only (never logged): it is not stored.
            println!("privboost: created the admin API key (shown only now, keep it safe):\n{key}");
        }
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .with_context(|| format!("binding {}", args.bind))?;
        // The bound address, not the requested one: with port 0 this is how
        // a supervisor (or the crash test) learns the port.
        let address = listener
            .local_addr()
            .with_context(|| format!("reading the address bound for {}", args.bind))?;
        let metrics = match args.metrics_bind {
            Some(at) => {
                let l = tokio::net::TcpListener::bind(at)
                    .await
                    .with_context(|| format!("binding the metrics listener {at}"))?;
                let bound = l
                    .local_addr()
                    .with_context(|| format!("reading the address bound for {at}"))?;
                tracing::info!(address = %bound, "metrics served without a key");
                Some(l)
            }
            None => None,
        };
        tracing::info!(%address, database = %db, "privboost serving");
        api::serve_with_metrics(listener, metrics, server, shutdown_signal())
            .await
            .context("serving")?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// Completes on Ctrl-C or SIGTERM (what `docker stop` sends).
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received");
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn config(args: &[&str]) -> anyhow::Result<Config> {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))?;
        cli.serve.config()
    }

    #[test]
    fn the_rate_limit_is_on_by_default_and_zero_turns_it_off() {
        assert_eq!(
            config(&[]).unwrap().rate_limit,
            Some(api::DEFAULT_RATE_LIMIT)
        );
        assert_eq!(config(&["--rate-limit", "0"]).unwrap().rate_limit, None);
        let c = config(&["--rate-limit", "5", "--rate-burst", "7"]).unwrap();
        let l = c.rate_limit.unwrap();
        assert_eq!((l.per_second.get(), l.burst.get()), (5, 7));
        assert!(config(&["--rate-limit", "5", "--rate-burst", "0"]).is_err());
        assert!(config(&["--header-read-timeout", "0"]).is_err());
    }
}
