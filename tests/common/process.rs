//! The real `privboost` binary as a child process: started on port 0 with a
//! given data directory, its address read from its JSON log, and stopped
//! with SIGKILL (a crash) or SIGTERM.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a start may take before the test fails (a cold debug binary
/// migrating a fresh file takes well under a second).
const START_DEADLINE: Duration = Duration::from_secs(30);

/// A running `privboost serve` child.
pub struct ChildServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Where its stderr (the JSON log) goes.
    pub log: PathBuf,
    child: Child,
}

impl ChildServer {
    /// Start `privboost serve` on 127.0.0.1:0 in `data_dir` with the test
    /// admin key, logging JSON to `log` (appended), with extra flags.
    pub fn start(data_dir: &Path, log: &Path, extra: &[&str]) -> ChildServer {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the server log");
        let start_offset = file.metadata().expect("log metadata").len();
        let child = Command::new(env!("CARGO_BIN_EXE_privboost"))
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--log-json",
                "--admin-key",
                super::ADMIN_KEY,
                // The crash and load tests drive one key far above the
                // per-key rate limit on purpose; `tests/limits.rs` tests
                // the limit itself.
                "--rate-limit",
                "0",
            ])
            .arg("--data-dir")
            .arg(data_dir)
            .args(extra)
            // One INFO line per response is a lot of log for a load test.
            .env("RUST_LOG", "privboost=info,tower_http=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("spawn privboost serve");
        let mut server = ChildServer {
            url: String::new(),
            log: log.to_owned(),
            child,
        };
        server.url = format!("http://{}", server.wait_for_address(start_offset));
        server
    }

    /// Read the log from `offset` until the "privboost serving" line.
    fn wait_for_address(&mut self, offset: u64) -> String {
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Some(address) = serving_address(&self.log, offset) {
                return address;
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!(
                    "the server exited at start ({status}); log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "the server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL and reap: no destructor, no graceful shutdown, open
    /// transactions torn off wherever they were.
    pub fn kill(mut self) {
        self.kill_now();
    }

    fn kill_now(&mut self) {
        // `Child::kill` is SIGKILL on Unix.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for a clean exit.
    pub fn terminate(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(exit) = self.child.try_wait().expect("try_wait") {
                assert!(exit.success(), "exit status {exit}");
                return;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ChildServer {
    /// A failing test must not leave a server running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill_now();
        }
    }
}

/// The address in the first "privboost serving" JSON log line after `offset`.
fn serving_address(log: &Path, offset: u64) -> Option<String> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(log).ok()?;
    file.seek(SeekFrom::Start(offset)).ok()?;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.ok()?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["fields"]["message"] == "privboost serving" {
            return v["fields"]["address"].as_str().map(str::to_owned);
        }
    }
    None
}
