//! `syncbench probe` end to end: the real binary on real directories, tmpfs and an xfs loop device.
//! Tests that need root, a package or a kernel feature skip with a message when it is missing; mounts and
//! loop devices are torn down by guards on every path.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use syncbench::core::schema::Envelope;
use syncbench::observe::probe::payload::ProbePayload;

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").expect("syncbench binary")
}

/// Run `probe --quick --json - DIR` and parse the document.
fn probe_json(dir: &Path) -> Value {
    let out = syncbench().args(["probe", "--quick", "--json", "-"]).arg(dir).output().unwrap();
    assert!(out.status.success(), "probe failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

fn verdict_codes(doc: &Value) -> Vec<String> {
    doc["verdicts"].as_array().unwrap().iter().map(|v| v["code"].as_str().unwrap().to_string()).collect()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".syncbench-"))
        .collect()
}

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|l| l.split_whitespace().next()) == Some("0")
}

fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new(cmd).args(args).output().map_err(|e| format!("{cmd}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Unmounts on drop.
struct Mounted(PathBuf);

impl Mounted {
    fn new(args: &[&str], target: &Path) -> Result<Mounted, String> {
        let mut all: Vec<&str> = args.to_vec();
        all.push(target.to_str().unwrap());
        run("mount", &all).map(|_| Mounted(target.to_path_buf()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Err(e) = run("umount", &[self.0.to_str().unwrap()]) {
            eprintln!("warning: {e}");
        }
    }
}

/// A tmpfs mounted with `options` on `dir` for the test, or why not (the test then returns `crate::skip`).
fn tmpfs(options: &str, dir: &Path) -> Result<Mounted, String> {
    if !is_root() {
        return Err("mounting tmpfs needs root".to_string());
    }
    Mounted::new(&["-t", "tmpfs", "-o", options, "syncbench-test"], dir)
        .map_err(|e| format!("cannot mount tmpfs -o {options}: {e}"))
}

/// Detaches a loop device on drop.
struct LoopDevice(String);

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Err(e) = run("losetup", &["-d", &self.0]) {
            eprintln!("warning: {e}");
        }
    }
}

#[test]
fn probe_prints_a_tree_and_verdicts_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = syncbench().args(["probe", "--quick"]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // The answer first (verdicts, then the flush burst they judge), then the tree they come from.
    assert!(text.starts_with("verdicts"), "{text}");
    let tree = format!("\n{}\n└─ ", dir.path().canonicalize().unwrap().display());
    let (at_flush, at_tree) = (text.find("flush burst: ").unwrap(), text.find(&tree).expect("the tree"));
    assert!(at_flush < at_tree && text.contains("fdatasync/s"), "{text}");
    assert!(leftovers(dir.path()).is_empty(), "left behind: {:?}", leftovers(dir.path()));
}

#[test]
fn probe_json_matches_sysfs_and_carries_the_burst() {
    let dir = tempfile::tempdir().unwrap();
    let doc = probe_json(dir.path());
    assert_eq!(doc["schema"], "syncbench/v1");
    let typed: Envelope<ProbePayload> = serde_json::from_value(doc.clone()).expect("reads back as a probe document");
    assert_eq!(typed.environment.dir, dir.path().canonicalize().unwrap().display().to_string());
    let env = &doc["environment"];
    assert_ne!(env["fs_type"], "unknown", "{env:#}");
    let burst = &doc["probe"]["flush_burst"];
    assert!(burst["ops"].as_u64().unwrap() > 0 && burst["ops_per_s"].as_f64().unwrap() > 0.0, "{burst:#}");
    assert_eq!(burst["method"], "fdatasync");
    // Every disk the probe names agrees with /sys, read here independently.
    for dev in env["devices"].as_array().unwrap().iter().filter(|d| d["kind"] == "disk") {
        let name = dev["name"].as_str().unwrap();
        let queue = Path::new("/sys/block").join(name).join("queue");
        if let Ok(rot) = std::fs::read_to_string(queue.join("rotational")) {
            assert_eq!(dev["rotational"].as_bool(), Some(rot.trim() == "1"), "{name}");
        }
        if let Ok(wc) = std::fs::read_to_string(queue.join("write_cache")) {
            assert_eq!(dev["write_cache"].as_str(), Some(wc.trim()), "{name}");
        }
    }
    // The plausibility rule agrees with the measurement it was given. A virtio disk's "rotational" is the
    // kernel's default, not a fact: no platter is assumed for it.
    let spins = |d: &&Value| d["kind"] == "disk" && d["rotational"] == true && d["transport"] != "virtio";
    let rotational = env["devices"].as_array().unwrap().iter().any(|d| spins(&d));
    let median_ns = burst["latency_ns"]["p50"].as_u64().unwrap();
    let buckets = burst["histogram_log2"].as_array().unwrap();
    let count = |quick: bool| -> u64 {
        let is_quick = |b: &&Value| b["lower_ns"].as_u64().unwrap() * 2 <= 524_288;
        buckets.iter().filter(|b| is_quick(b) == quick).map(|b| b["count"].as_u64().unwrap()).sum()
    };
    let quick_fraction = count(true) as f64 / (count(true) + count(false)) as f64;
    let too_fast = burst["ops_per_s"].as_f64().unwrap() > 250.0 || median_ns < 1_000_000 || quick_fraction >= 0.1;
    let implausible = too_fast && rotational;
    assert_eq!(verdict_codes(&doc).contains(&"implausible_flush_rate".to_string()), implausible, "{doc:#}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["probe".into(), dir.path().join("absent").display().to_string()],
        vec!["probe".into(), file.display().to_string()],
        vec!["probe".into(), "--secs".into(), "0".into(), dir.path().display().to_string()],
        vec!["probe".into(), "--json".into(), "/nonexistent-dir/x.json".into(), dir.path().display().to_string()],
    ];
    for args in cases {
        let out = syncbench().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn ctrl_c_during_the_burst_removes_the_burst_file() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("syncbench");
    let mut child = std::process::Command::new(bin)
        .args(["probe", "--secs", "20"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while leftovers(dir.path()).iter().all(|n| !n.contains("-run-")) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let started = !leftovers(dir.path()).is_empty();
    run("kill", &["-INT", &child.id().to_string()]).unwrap();
    let status = child.wait().unwrap();
    assert!(started, "the burst file never appeared");
    assert_eq!(status.code(), Some(130));
    assert!(leftovers(dir.path()).is_empty(), "left behind: {:?}", leftovers(dir.path()));
}

#[test]
fn tmpfs_is_reported_as_not_durable() {
    let dir = tempfile::tempdir().unwrap();
    let _mount = match tmpfs("size=16m", dir.path()) {
        Ok(m) => m,
        Err(why) => return crate::skip(why),
    };
    let doc = probe_json(dir.path());
    assert_eq!(doc["environment"]["fs_type"], "tmpfs");
    assert_eq!(doc["environment"]["devices"].as_array().unwrap().len(), 0);
    assert!(verdict_codes(&doc).contains(&"not_durable_memory_fs".to_string()), "{doc:#}");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn read_only_dir_is_probed_without_a_burst() {
    let dir = tempfile::tempdir().unwrap();
    let _mount = match tmpfs("ro,size=1m", dir.path()) {
        Ok(m) => m,
        Err(why) => return crate::skip(why),
    };
    let doc = probe_json(dir.path());
    assert!(doc["probe"]["flush_burst"].is_null());
    let skipped = doc["probe"]["flush_burst_skipped"].as_str().unwrap();
    assert!(skipped.contains("Read-only") || skipped.contains("read-only"), "{skipped}");
    assert_eq!(doc["environment"]["fs_type"], "tmpfs");
}

#[test]
fn a_read_only_bind_mount_shows_its_own_options_apart_from_the_file_systems() {
    // A read-only bind mount of a read-write file system: mountinfo says `ro` for the mount and `rw` for the
    // super-block; probe must not print them mixed as `[ro,relatime,rw,…]`.
    let source = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    let _mount = if is_root() {
        let bound = match Mounted::new(&["--bind", source.path().to_str().unwrap()], target.path()) {
            Ok(m) => m,
            Err(e) => return crate::skip(format!("cannot bind-mount: {e}")),
        };
        if let Err(e) = run("mount", &["-o", "remount,bind,ro", target.path().to_str().unwrap()]) {
            return crate::skip(format!("cannot remount the bind mount read-only: {e}"));
        }
        bound
    } else {
        return crate::skip("bind mounts need root");
    };
    let out = syncbench().args(["probe", "--quick"]).arg(target.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // The answer (verdicts) comes first; the tree's mount line carries the options.
    let line = text.lines().find(|l| l.contains(" [mount ")).unwrap_or_default();
    let options = line.split_once(" [").map(|(_, o)| o.trim_end_matches(']')).unwrap_or_else(|| panic!("{text}"));
    let (mount, super_block) = options.split_once("; ").unwrap_or_else(|| panic!("{line}"));
    let mount: Vec<&str> = mount.strip_prefix("mount ").unwrap_or_else(|| panic!("{line}")).split(',').collect();
    let super_block: Vec<&str> =
        super_block.strip_prefix("super-block ").unwrap_or_else(|| panic!("{line}")).split(',').collect();
    assert!(mount.contains(&"ro") && !mount.contains(&"rw"), "{line}");
    assert!(super_block.contains(&"rw") && !super_block.contains(&"ro"), "{line}");
    let doc = probe_json(target.path());
    assert_eq!(doc["environment"]["per_mount_options"][0], "ro", "{}", doc["environment"]);
    assert_eq!(doc["environment"]["super_options"][0], "rw", "{}", doc["environment"]);
}

#[test]
fn a_full_file_system_skips_the_burst_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    // Smaller than the 2 MiB burst file: preparing it runs out of space.
    let _mount = match tmpfs("size=1m", dir.path()) {
        Ok(m) => m,
        Err(why) => return crate::skip(why),
    };
    let doc = probe_json(dir.path());
    let skipped = doc["probe"]["flush_burst_skipped"].as_str().unwrap();
    assert!(skipped.contains("No space left"), "{skipped}");
    assert!(doc["probe"]["flush_burst_error"].is_null());
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn xfs_on_a_loop_device_names_the_loop_and_the_backing_file_system() {
    if !is_root() {
        return crate::skip("loop devices need root");
    }
    if !have("mkfs.xfs") || !have("losetup") {
        return crate::skip("needs mkfs.xfs (xfsprogs) and losetup (mount)");
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("xfs.img");
    // xfsprogs refuses file systems under 300 MiB; the image is sparse, so this costs little space.
    std::fs::File::create(&image).unwrap().set_len(320 << 20).unwrap();
    let device = match run("losetup", &["--find", "--show", image.to_str().unwrap()]) {
        Ok(d) => LoopDevice(d),
        Err(e) => return crate::skip(format!("cannot attach a loop device: {e}")),
    };
    if let Err(e) = run("mkfs.xfs", &["-q", "-f", &device.0]) {
        return crate::skip(format!("mkfs.xfs failed: {e}"));
    }
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _mount = match Mounted::new(&[&device.0], &mnt) {
        Ok(m) => m,
        Err(e) => return crate::skip(format!("cannot mount xfs: {e}")),
    };
    let doc = probe_json(&mnt);
    let env = &doc["environment"];
    assert_eq!(env["fs_type"], "xfs", "{env:#}");
    let loop_name = device.0.trim_start_matches("/dev/");
    assert_eq!(env["devices"][0]["name"], loop_name, "{env:#}");
    assert_eq!(env["devices"][0]["kind"], "loop");
    let backing = &env["loop_backing"];
    assert_eq!(backing["file"], image.to_str().unwrap(), "{backing:#}");
    let holder_fs = doc_fs_type_of(dir.path());
    assert_eq!(backing["fs_type"], holder_fs.as_str(), "{backing:#}");
    assert!(verdict_codes(&doc).contains(&"layered_loop".to_string()), "{doc:#}");
    let text = syncbench().args(["probe", "--no-burst"]).arg(&mnt).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(&format!("{loop_name} (7:")) && text.contains("backing file"), "{text}");
    assert!(leftovers(&mnt).is_empty());
}

/// The file-system type syncbench reports for `dir` (used to check the loop's backing file system).
fn doc_fs_type_of(dir: &Path) -> String {
    let out = syncbench().args(["probe", "--no-burst", "--json", "-"]).arg(dir).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["environment"]["fs_type"].as_str().unwrap().to_string()
}
