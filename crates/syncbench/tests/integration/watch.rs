//! `syncbench watch`: the textfile and state it writes, its refusals, SIGTERM, and the Prometheus rules it
//! ships, tested with Prometheus' own `promtool` (Debian's `prometheus` package, .ci/deps/watch.txt).

use assert_cmd::Command;
use predicates::str::contains;
use std::path::{Path, PathBuf};

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").unwrap()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The value of the first sample of `metric` whose line contains every one of `labels`.
fn sample(text: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")) || l.starts_with(&format!("{metric} ")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn once(dir: &Path, state: &Path, textfile: &Path) -> assert_cmd::assert::Assert {
    let d = dir.to_str().unwrap();
    let (s, t) = (state.to_str().unwrap(), textfile.to_str().unwrap());
    syncbench()
        .args(["watch", d, "--once", "--every", "4s", "--duty", "10%", "--state", s, "--openmetrics", t])
        .assert()
}

#[test]
fn once_writes_the_textfile_and_the_state_and_leaves_nothing_in_dir() {
    let (tmp, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (state, textfile) = (out.path().join("state.json"), out.path().join("syncbench.prom"));
    for round in 1..=2 {
        once(tmp.path(), &state, &textfile).success().stdout(contains("fdatasync_8k p99"));
        let text = std::fs::read_to_string(&textfile).unwrap();
        assert!(text.ends_with("# EOF\n"), "{text}");
        let latency =
            sample(&text, "syncbench_watch_commit_latency_seconds", &["case=\"fdatasync_8k\"", "quantile=\"0.99\""]);
        assert!(latency.is_some_and(|s| s > 0.0), "{text}");
        for metric in [
            "syncbench_watch_interval_seconds",
            "syncbench_watch_last_success_timestamp_seconds",
            "syncbench_watch_info",
        ] {
            assert!(sample(&text, metric, &[]).is_some(), "{metric} missing:\n{text}");
        }
        assert_eq!(sample(&text, "syncbench_watch_interval_seconds", &[]), Some(4.0));
        let state_json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        assert_eq!(state_json["intervals"], round);
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left in DIR: {left:?}");
    let beside: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(beside.len(), 2, "only the state and the textfile: {beside:?}");
}

#[test]
fn bad_flags_and_foreign_files_are_refused_with_one_line_and_nothing_written() {
    let (tmp, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let d = tmp.path().to_str().unwrap();
    for (args, says) in [
        (vec!["--every", "5 parsecs"], "invalid --every"),
        (vec!["--duty", "90%"], "invalid --duty"),
        (vec!["--every", "2s", "--duty", "1%"], "a canary needs at least"),
        (vec!["--once"], "--once needs --state"),
        (vec!["--duty", "0"], "invalid --duty"),
        (vec!["--duty", "0%"], "invalid --duty"),
        (vec!["--duty", "200%"], "invalid --duty"),
        (vec!["--duty=-1%"], "invalid --duty"),
        (vec!["--every", "0"], "invalid --every"),
        (vec!["--every", "0s"], "invalid --every"),
        (vec!["--every", "25h"], "invalid --every"),
    ] {
        let mut cmd = syncbench();
        cmd.args(["watch", d]).args(&args);
        let assert = cmd.assert().code(2).stderr(contains(says));
        assert_eq!(String::from_utf8_lossy(&assert.get_output().stderr).lines().count(), 1, "{args:?}");
    }
    let (state, textfile) = (out.path().join("state.json"), out.path().join("other.prom"));
    std::fs::write(&textfile, "node_load1 0.5\n").unwrap();
    once(tmp.path(), &state, &textfile).code(2).stderr(contains("holds metrics syncbench did not write"));
    assert_eq!(std::fs::read_to_string(&textfile).unwrap(), "node_load1 0.5\n");
    std::fs::write(&state, "{\"not\": \"ours\"}").unwrap();
    once(tmp.path(), &state, &out.path().join("new.prom")).code(2).stderr(contains("not a syncbench watch state"));
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "{\"not\": \"ours\"}");
    assert!(!out.path().join("new.prom").exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_second_watch_on_the_same_directory_is_refused_and_sigterm_leaves_whole_files() {
    let (tmp, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (d, textfile) = (tmp.path().to_str().unwrap(), out.path().join("s.prom"));
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"))
        .args(["watch", d, "--every", "1s", "--duty", "50%", "--openmetrics", textfile.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !textfile.exists() {
        assert!(std::time::Instant::now() < deadline, "no textfile after 120 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    syncbench()
        .args(["watch", d, "--every", "1s", "--duty", "50%"])
        .assert()
        .code(2)
        .stderr(contains("another syncbench"));
    // SIGTERM at once, whatever the first is doing: a whole textfile, nothing left in DIR or beside it.
    std::process::Command::new("kill").args(["-TERM", &first.id().to_string()]).status().unwrap();
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(std::fs::read_to_string(&textfile).unwrap().ends_with("# EOF\n"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "left in DIR");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1, "a temporary textfile was left");
}

/// A watch running in the background, stopped with SIGTERM however the test ends (a failed assertion
/// must not leave it measuring for ever).
struct Watch(Option<std::process::Child>);

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }
}

/// A watch started in the background on `dir` (every 1 s at 50%: it is nearly always measuring or
/// writing), its stderr in `stderr`.
fn spawn_watch(dir: &Path, textfile: &Path, state: Option<&Path>, stderr: &Path) -> Watch {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("syncbench"));
    cmd.arg("watch").arg(dir).args(["--every", "1s", "--duty", "50%", "--openmetrics"]).arg(textfile);
    if let Some(state) = state {
        cmd.arg("--state").arg(state);
    }
    // Its own registry beside its stderr: what it records is its own (see `registry_left`).
    cmd.env("SYNCBENCH_STATE_DIR", registry_of(stderr));
    Watch(Some(cmd.stdout(std::process::Stdio::null()).stderr(std::fs::File::create(stderr).unwrap()).spawn().unwrap()))
}

fn registry_of(stderr: &Path) -> PathBuf {
    stderr.with_extension("registry")
}

/// The records a watch (whose stderr went to `stderr`) left in its registry.
fn registry_left(stderr: &Path) -> Vec<String> {
    let registry = registry_of(stderr);
    if !registry.exists() {
        return Vec::new(); // killed before it recorded anything
    }
    names_in(&registry).into_iter().filter(|n| n.ends_with(".json")).collect()
}

/// Wait (up to 120 s) for `cond`, failing with `what` and the watch's stderr.
fn wait_until(what: &str, stderr: &Path, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !cond() {
        let said = std::fs::read_to_string(stderr).unwrap_or_default();
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}; watch said:\n{said}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// SIGTERM, and the exit status of a clean stop (143).
fn terminate(mut watch: Watch) {
    let mut child = watch.0.take().unwrap();
    std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// A textfile that exists is whole: what the collector reads ends with the OpenMetrics end marker.
fn assert_whole(textfile: &Path) {
    if let Ok(text) = std::fs::read_to_string(textfile) {
        assert!(text.ends_with("# EOF\n"), "a half-written textfile:\n{text}");
    }
}

fn last_success(textfile: &Path) -> f64 {
    let text = std::fs::read_to_string(textfile).unwrap_or_default();
    sample(&text, "syncbench_watch_last_success_timestamp_seconds", &[]).unwrap_or(0.0)
}

/// The watched directory's file system (here also the textfile's and the state's) fills up while the watch
/// runs: every interval that cannot be recorded is one line saying why, the textfile stays whole (the old
/// one), the watch keeps running and records again once there is room; files it did not create are left
/// alone, and SIGTERM leaves only its textfile and state.
#[test]
fn a_full_file_system_is_one_line_per_interval_and_the_watch_goes_on_with_whole_files() {
    let Some(fs) = crate::run::mount_or_skip("a 16 MiB tmpfs", &["-t", "tmpfs", "-o", "size=16m", "tmpfs"]) else {
        return;
    };
    let (dir, out, logs) = (fs.point.join("wal"), fs.point.join("textfile"), tempfile::tempdir().unwrap());
    std::fs::create_dir(&dir).unwrap();
    std::fs::create_dir(&out).unwrap();
    // Files that are not the watch's, in both directories.
    std::fs::write(dir.join("000000010000000000000001"), b"a database's WAL segment").unwrap();
    std::fs::write(out.join("node.prom"), b"node_textfile_other 1\n").unwrap();
    let (textfile, state, stderr) = (out.join("syncbench.prom"), out.join("state.json"), logs.path().join("err"));
    let watch = spawn_watch(&dir, &textfile, Some(&state), &stderr);
    wait_until("the first textfile", &stderr, || textfile.exists());
    // Fill the file system to the last byte.
    let filler = fs.point.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    while std::io::Write::write(&mut file, &chunk).is_ok_and(|n| n > 0) {}
    drop(file);
    let full_at = std::fs::read_to_string(&stderr).unwrap().lines().count();
    // Two intervals that could not be recorded, the textfile whole at every read meanwhile.
    wait_until("two 'interval not recorded' lines", &stderr, || {
        assert_whole(&textfile);
        let said = std::fs::read_to_string(&stderr).unwrap();
        said.lines().skip(full_at).filter(|l| l.contains("interval not recorded")).count() >= 2
    });
    let said = std::fs::read_to_string(&stderr).unwrap();
    let line = said.lines().skip(full_at).find(|l| l.contains("interval not recorded")).unwrap();
    assert!(line.contains("No space left on device") && line.contains("watching on"), "{line}");
    assert!(names_in(&out).iter().all(|n| !n.ends_with(".tmp")), "a temporary file left: {:?}", names_in(&out));
    // The same writer, asked for a textfile larger than the room left (the watch's own may fit in the pages
    // of the one it replaces): it fails, and the old file is still whole and nothing else is left.
    let before = std::fs::read(&textfile).unwrap();
    let bigger = format!("{}# EOF\n", "syncbench_watch_x 1\n".repeat(8192));
    let e = syncbench::measure::watch::state::write_atomically(&textfile, bigger.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("No space left on device"), "{e}");
    let after = std::fs::read(&textfile).unwrap();
    assert!(
        after == before,
        "the textfile was changed by a write that failed: {} bytes, {} before",
        after.len(),
        before.len()
    );
    assert!(names_in(&out).iter().all(|n| !n.ends_with(".tmp")), "a temporary file left: {:?}", names_in(&out));
    // Room again: the watch records again without being restarted.
    std::fs::remove_file(&filler).unwrap();
    let freed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    wait_until("a textfile written after the room came back", &stderr, || last_success(&textfile) > freed);
    terminate(watch);
    assert_whole(&textfile);
    assert_eq!(names_in(&dir), ["000000010000000000000001"]);
    assert_eq!(names_in(&out), ["node.prom", "state.json", "syncbench.prom"]);
}

/// The textfile directory is removed while the watch runs (a package reinstalled, a tmpfs unmounted): one
/// line per interval saying so, no file created anywhere meanwhile (not the directory either: it is not
/// the watch's), and once the directory is back the watch writes there again.
#[test]
fn a_vanished_textfile_directory_is_one_line_per_interval_and_nothing_is_created() {
    let (tmp, parent, logs) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = parent.path().join("textfile");
    std::fs::create_dir(&out).unwrap();
    let (textfile, stderr) = (out.join("syncbench.prom"), logs.path().join("err"));
    let watch = spawn_watch(tmp.path(), &textfile, None, &stderr);
    wait_until("the first textfile", &stderr, || textfile.exists());
    std::fs::remove_dir_all(&out).unwrap();
    wait_until("two 'interval not recorded' lines", &stderr, || {
        assert!(!out.exists(), "the watch made the textfile directory again");
        let said = std::fs::read_to_string(&stderr).unwrap();
        said.lines().filter(|l| l.contains("interval not recorded")).count() >= 2
    });
    let said = std::fs::read_to_string(&stderr).unwrap();
    let line = said.lines().find(|l| l.contains("interval not recorded")).unwrap();
    assert!(line.contains(textfile.to_str().unwrap()) && line.contains("no such file or directory"), "{line}");
    assert_eq!(names_in(parent.path()), Vec::<String>::new());
    std::fs::create_dir(&out).unwrap();
    wait_until("the textfile written again", &stderr, || textfile.exists());
    terminate(watch);
    assert_whole(&textfile);
    assert_eq!(names_in(&out), ["syncbench.prom"]);
    assert_eq!(names_in(tmp.path()), Vec::<String>::new(), "left in DIR");
}

/// SIGTERM at random moments of a watch's life (starting, preparing, measuring, writing, sleeping): every
/// time a clean exit (143), a whole textfile if any, nothing left in DIR or beside the textfile.
#[test]
fn sigterm_at_random_moments_leaves_whole_files_and_nothing_else() {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let mut rng = u64::from(seed) | 1;
    let mut next_ms = |max: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % max
    };
    for kill in 0..6 {
        let (tmp, out, logs) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (textfile, state, stderr) =
            (out.path().join("s.prom"), out.path().join("state.json"), logs.path().join("e"));
        let watch = spawn_watch(tmp.path(), &textfile, Some(&state), &stderr);
        // Half the kills anywhere in the first 3 s (mostly before or during the first interval), half
        // after the first textfile, anywhere in the next 2 s.
        let delay_ms = if kill % 2 == 0 {
            next_ms(3000)
        } else {
            wait_until("the first textfile", &stderr, || textfile.exists());
            next_ms(2000)
        };
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        terminate(watch);
        let context = format!("kill {kill} after {delay_ms} ms (seed {seed})");
        assert_whole(&textfile);
        assert_eq!(names_in(tmp.path()), Vec::<String>::new(), "left in DIR: {context}");
        // The handler exits without dropping guards: it deletes the records of what it removed itself.
        assert_eq!(registry_left(&stderr), Vec::<String>::new(), "records left: {context}");
        let beside = names_in(out.path());
        assert!(beside.iter().all(|n| n == "s.prom" || n == "state.json"), "{beside:?}: {context}");
        if state.exists() {
            let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
            assert_eq!(json["schema"], "syncbench/watch-state/v1", "{context}");
        }
    }
}

fn promtool() -> Option<PathBuf> {
    syncbench::proof::lab::prereq::find_program("promtool")
}

fn promtool_run(args: &[&str], dir: &Path) -> std::process::Output {
    std::process::Command::new(promtool().unwrap()).args(args).current_dir(dir).output().unwrap()
}

#[test]
fn the_shipped_rules_pass_promtool_and_their_test_catches_a_planted_bug() {
    if promtool().is_none() {
        return crate::skip("promtool is not installed (Debian package prometheus)");
    }
    let rules_dir = repo_root().join("deploy/prometheus");
    let check = promtool_run(&["check", "rules", "syncbench-rules.yml"], &rules_dir);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    let test = promtool_run(&["test", "rules", "syncbench-rules.test.yml"], &rules_dir);
    assert!(
        test.status.success(),
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    // The planted bug: the regression alert fires on a disk confirmed faster (the gauge watch re-learns
    // from, never an alarm) as well as on a slower one. Its unit test must fail.
    let planted = tempfile::tempdir().unwrap();
    let rules = std::fs::read_to_string(rules_dir.join("syncbench-rules.yml")).unwrap();
    let wrong = rules.replacen(
        "(syncbench_watch_change{what=~\"latency_p99|rate\"})",
        "({__name__=~\"syncbench_watch_change|syncbench_watch_faster\", what=~\"latency_p99|rate\"})",
        1,
    );
    assert_ne!(rules, wrong);
    std::fs::write(planted.path().join("syncbench-rules.yml"), wrong).unwrap();
    std::fs::copy(rules_dir.join("syncbench-rules.test.yml"), planted.path().join("syncbench-rules.test.yml")).unwrap();
    let caught = promtool_run(&["test", "rules", "syncbench-rules.test.yml"], planted.path());
    assert!(!caught.status.success(), "the rules' test passed a regression alert that fires on a faster disk");
}

#[test]
fn every_dashboard_query_is_valid_promql_and_names_metrics_watch_writes() {
    if promtool().is_none() {
        return crate::skip("promtool is not installed (Debian package prometheus)");
    }
    let path = repo_root().join("deploy/grafana/syncbench-watch-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter().map(|t| t["expr"].as_str().unwrap().to_string()))
        .collect();
    assert!(exprs.len() >= 9, "{exprs:?}");
    // promtool checks PromQL inside rule files: one recording rule per query, Grafana's variables filled in.
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in exprs.iter().enumerate() {
        let e = e.replace("$instance", ".*").replace("$dir", ".*");
        rules +=
            &format!("      - record: dashboard_query_{i}\n        expr: {}\n", serde_json::to_string(&e).unwrap());
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("q.yml"), rules).unwrap();
    let check = promtool_run(&["check", "rules", "q.yml"], tmp.path());
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let doc = std::fs::read_to_string(repo_root().join("docs/watch.md")).unwrap();
    for e in &exprs {
        for name in e
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .filter(|w| w.starts_with("syncbench_watch_"))
        {
            assert!(doc.contains(&format!("`{name}`")), "{name} is not in docs/watch.md's metric table");
        }
    }
}

/// The whole loop as an operator runs it: `watch` on a lab disk writes into node_exporter's textfile
/// directory, Prometheus scrapes it every second and evaluates the shipped rules; the lab disk's flush cost
/// is raised live; the regression alert must fire, and must not have fired before. A watch with a planted
/// bug (a baseline that never learns) must not raise it: the test would catch that bug.
#[cfg(feature = "fuse")]
mod end_to_end {
    use crate::skip;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    /// syncbench with this test's private registry: the loop devices it attaches are noted there.
    fn syncbench() -> Command {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("syncbench"));
        crate::attached_loops::private(&mut command);
        command
    }

    fn program(name: &str) -> Option<PathBuf> {
        syncbench::proof::lab::prereq::find_program(name)
    }

    /// A free port on loopback (bound, then released for the server to take).
    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// Children killed (and a lab taken down) however the test ends.
    struct Stack {
        children: Vec<Child>,
        lab: Option<PathBuf>,
    }

    impl Drop for Stack {
        fn drop(&mut self) {
            for child in &mut self.children {
                let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
                let _ = child.wait();
            }
            if let Some(mount) = &self.lab {
                let _ = syncbench().args(["lab", "down"]).arg(mount).output();
            }
            if !std::thread::panicking() {
                let left = crate::attached_loops::still_attached();
                assert!(left.is_empty(), "loop devices left attached: {left:#?}");
            }
        }
    }

    /// GET `path` from 127.0.0.1:`port` (HTTP/1.0: the server closes when done); the body.
    fn http_get(port: u16, path: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        response.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
    }

    /// Whether Prometheus has the regression alert firing now.
    fn regression_firing(port: u16) -> bool {
        http_get(port, "/api/v1/alerts").is_some_and(|body| {
            let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            v["data"]["alerts"].as_array().is_some_and(|alerts| {
                alerts.iter().any(|a| {
                    a["labels"]["alertname"] == "SyncbenchDurableWriteLatencyRegressed" && a["state"] == "firing"
                })
            })
        })
    }

    /// The newest value of an instant query's first sample.
    fn query(port: u16, promql: &str) -> Option<f64> {
        let body = http_get(port, &format!("/api/v1/query?query={promql}"))?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }

    /// node_exporter (textfile collector only) and Prometheus (1 s scrape and evaluation, the shipped rules).
    fn start_monitoring(stack: &mut Stack, work: &Path, textfiles: &Path) -> u16 {
        let (exporter_port, prometheus_port) = (free_port(), free_port());
        let exporter = Command::new(program("prometheus-node-exporter").unwrap())
            .arg(format!("--web.listen-address=127.0.0.1:{exporter_port}"))
            .args(["--collector.disable-defaults", "--collector.textfile"])
            .arg(format!("--collector.textfile.directory={}", textfiles.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        stack.children.push(exporter);
        let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus/syncbench-rules.yml");
        let config = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nrule_files: [{:?}]\nscrape_configs:\n  - job_name: node\n    static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]\n",
            std::fs::canonicalize(rules).unwrap().display().to_string()
        );
        std::fs::write(work.join("prometheus.yml"), config).unwrap();
        let prometheus = Command::new(program("prometheus").unwrap())
            .arg(format!("--config.file={}", work.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", work.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        stack.children.push(prometheus);
        wait_for("Prometheus to answer", Duration::from_secs(60), || http_get(prometheus_port, "/-/ready").is_some());
        prometheus_port
    }

    fn wait_for(what: &str, limit: Duration, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + limit;
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// One trial: a lab disk, the monitoring, a watch (with `planted` bug or not), the step in flush cost.
    /// Returns how long after the step the alert fired, if it did within `window` (panics if it fired
    /// before the step), and watch's own lines, to show when the test fails.
    fn trial(planted: Option<&str>, window: Duration) -> (Option<Duration>, String) {
        let work = tempfile::tempdir().unwrap();
        let (mount, textfiles) = (work.path().join("mnt"), work.path().join("textfile"));
        std::fs::create_dir_all(&mount).unwrap();
        std::fs::create_dir_all(&textfiles).unwrap();
        let mut stack = Stack { children: Vec::new(), lab: None };
        let up =
            syncbench().args(["lab", "up", "--profile", "ssd-200us", "--fs", "ext4"]).arg(&mount).output().unwrap();
        assert!(up.status.success(), "lab up: {}", String::from_utf8_lossy(&up.stderr));
        stack.lab = Some(mount.clone());
        let port = start_monitoring(&mut stack, work.path(), &textfiles);
        let mut watch = syncbench();
        watch.arg("watch").arg(&mount).args(["--every", "2s", "--duty", "25%", "--openmetrics"]);
        let log = std::fs::File::create(work.path().join("watch.log")).unwrap();
        watch.arg(textfiles.join("syncbench.prom")).stdout(log);
        if let Some(bug) = planted {
            watch.args(["--plant-bug", bug]);
        }
        stack.children.push(watch.spawn().unwrap());
        // The baseline learns (8 undisturbed intervals); the planted bug never gets there, so for it count
        // finished intervals instead.
        if planted.is_none() {
            wait_for("a learned baseline", Duration::from_secs(300), || {
                query(port, "syncbench_watch_baseline_intervals").is_some_and(|n| n >= 8.0)
            });
        } else {
            wait_for("twelve finished intervals", Duration::from_secs(300), || {
                query(port, "changes(syncbench_watch_last_success_timestamp_seconds[10m])").is_some_and(|n| n >= 11.0)
            });
        }
        assert!(!regression_firing(port), "the regression alert fired before the flush cost changed");
        let set = syncbench().args(["lab", "set"]).arg(&mount).args(["--flush-us", "8500"]).output().unwrap();
        assert!(set.status.success(), "lab set: {}", String::from_utf8_lossy(&set.stderr));
        // Detection within 3 undisturbed intervals, plus a scrape and an evaluation. An interval on the slowed
        // disk takes longer (the duty stretches the sleep to match), and a loaded machine disturbs some.
        let step = Instant::now();
        let mut fired = None;
        while step.elapsed() < window && fired.is_none() {
            fired = regression_firing(port).then(|| step.elapsed());
            std::thread::sleep(Duration::from_millis(500));
        }
        let lines = std::fs::read_to_string(work.path().join("watch.log")).unwrap_or_default();
        (fired, lines)
    }

    #[test]
    fn the_regression_alert_fires_after_a_live_flush_cost_step_and_not_with_a_frozen_baseline() {
        let needed = ["losetup", "mkfs.ext4", "mount", "umount", "prometheus", "prometheus-node-exporter"];
        if let Some(missing) = crate::missing_stack_prerequisite(&needed) {
            return skip(missing);
        }
        let (fired, lines) = trial(None, Duration::from_secs(150));
        let took = fired.unwrap_or_else(|| {
            panic!(
                "the regression alert did not fire within 150 s of the flush cost going from 200 µs to 8.5 ms:\n{lines}"
            )
        });
        // The negative control gets twice the time the real watch needed (30 s at least).
        let (fired, lines) = trial(Some("frozen-baseline"), (took * 2).max(Duration::from_secs(30)));
        assert!(fired.is_none(), "the alert fired although the watch's baseline never learned:\n{lines}");
    }
}
