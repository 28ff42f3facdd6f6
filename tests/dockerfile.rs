//! The Dockerfile cannot be built on the development machines (no container
//! registry is reachable, so no `FROM` image can be pulled; docs/service.md
//! "Operations"). This test keeps its build stage in step with the README's
//! build instructions instead: the same cargo command, the binary copied from
//! where that command puts it, every path the build needs copied in, and a
//! runtime stage that runs `serve`.

use std::path::Path;

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The Dockerfile's instructions, continuation lines joined, comments dropped.
fn instructions(dockerfile: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in dockerfile.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            current.push_str(head.trim_end());
            current.push(' ');
        } else {
            current.push_str(line);
            out.push(std::mem::take(&mut current).trim().to_string());
        }
    }
    out
}

/// The README's build command (in backticks, starting `cargo build`).
fn readme_build_command(readme: &str) -> String {
    let start = readme
        .find("`cargo build")
        .expect("README gives a cargo build command");
    let rest = &readme[start + 1..];
    rest[..rest.find('`').unwrap()].to_string()
}

#[test]
fn build_stage_runs_the_readme_build_and_copies_its_binary() {
    let readme = read("README.md");
    let docker = instructions(&read("Dockerfile"));
    let stages: Vec<usize> = docker
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("FROM "))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(stages.len(), 2, "a build and a runtime stage: {docker:?}");
    let (build, runtime) = (&docker[stages[0]..stages[1]], &docker[stages[1]..]);
    assert!(build[0].ends_with(" AS build"), "{}", build[0]);

    // The README's command is the build stage's, flag for flag (the image
    // may only add `--bin privboost`, the one binary it ships): same
    // profile, same `--locked` resolution.
    let command = readme_build_command(&readme);
    assert!(command.contains("--release"), "{command}");
    let runs: Vec<&str> = build
        .iter()
        .filter_map(|l| l.strip_prefix("RUN "))
        .filter(|l| l.starts_with("cargo build"))
        .collect();
    assert_eq!(
        runs.len(),
        1,
        "one cargo build in the build stage: {build:?}"
    );
    let docker_command = runs[0].replace(" --bin privboost", "");
    let words = |c: &str| -> std::collections::BTreeSet<String> {
        c.split_whitespace().map(str::to_owned).collect()
    };
    assert_eq!(
        words(&command),
        words(&docker_command),
        "README says `{command}`, the Dockerfile runs `{}`",
        runs[0]
    );

    // The binary the README names is the one copied into the runtime image.
    assert!(readme.contains("`target/release/privboost`"));
    let workdir = build
        .iter()
        .find_map(|l| l.strip_prefix("WORKDIR "))
        .expect("build stage WORKDIR");
    let copy = format!("COPY --from=build {workdir}/target/release/privboost ");
    assert!(
        runtime.iter().any(|l| l.starts_with(&copy)),
        "runtime must copy {copy}: {runtime:?}"
    );

    // Everything cargo needs is copied in: the manifest and lock file, and
    // every top-level directory that Cargo.toml or the sources refer to.
    let copied: Vec<&str> = build
        .iter()
        .filter_map(|l| l.strip_prefix("COPY "))
        .flat_map(|l| {
            let mut parts: Vec<&str> = l.split_whitespace().collect();
            parts.pop(); // destination
            parts
        })
        .collect();
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "migrations",
        "openapi.yaml",
    ] {
        assert!(copied.contains(&needed), "{needed} not copied: {copied:?}");
    }
    if read("Cargo.toml").contains("[[bench]]") {
        assert!(
            copied.contains(&"benches"),
            "benches not copied: {copied:?}"
        );
    }

    // The runtime stage starts the service.
    assert_eq!(
        runtime.last().map(String::as_str),
        Some("CMD [\"serve\"]"),
        "{runtime:?}"
    );
    assert!(runtime.iter().any(|l| l == "ENTRYPOINT [\"privboost\"]"));
}
