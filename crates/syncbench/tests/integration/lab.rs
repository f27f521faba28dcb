//! `syncbench lab` against the real kernel (root, /dev/fuse, loop devices): records that fdatasync returned
//! for survive a power cut on an honest disk and not all of them on one that ignores flushes; Ctrl-C during
//! `up` and during `cut` leaves nothing behind; refusals. Input errors are checked anywhere.

use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

#[test]
fn unknown_profile_and_bad_size_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().to_str().unwrap();
    Command::cargo_bin("syncbench")
        .unwrap()
        .args(["lab", "up", "--profile", "floppy", mount])
        .assert()
        .code(2)
        .stderr(contains("unknown lab profile \"floppy\"").and(contains("hdd-7200")));
}

#[test]
fn profiles_lists_every_profile_with_its_source() {
    let out = Command::cargo_bin("syncbench").unwrap().args(["lab", "profiles"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for name in
        ["hdd-7200", "sata-ssd-consumer", "nvme-consumer", "nvme-plp", "raid-bbu", "cheating-ssd", "ssd-200us", "zero"]
    {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    assert!(text.contains("118 fdatasync/s") && text.contains("ignores-flush"), "{text}");
    assert!(text.contains("the stack's own cost") && text.contains("bench/lab_cpu_idle.sh"), "{text}");
}

#[test]
fn bad_untorn_units_and_aims_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().to_str().unwrap();
    for (args, says) in [
        (vec!["lab", "up", "--profile", "zero", "--untorn", "3KiB", mount], "power of two"),
        (vec!["lab", "set", mount, "--untorn", "2MiB"], "to 1MiB"),
        (vec!["lab", "cut", mount, "--aim-min-bytes", "8KiB"], "--aim-data-write"),
    ] {
        Command::cargo_bin("syncbench").unwrap().args(&args).assert().code(2).stderr(contains(says));
    }
}

#[cfg(feature = "fuse")]
mod as_root {
    use crate::skip;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    const RECORD_BYTES: usize = 64;

    fn missing_prerequisite() -> Option<String> {
        crate::missing_stack_prerequisite(&[
            "losetup",
            "mkfs.ext4",
            "mkfs.xfs",
            "mkfs.btrfs",
            "mount",
            "umount",
            "setpriv",
        ])
    }

    /// syncbench with this test's private registry: the loop devices it attaches are noted there.
    fn syncbench() -> Command {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("syncbench"));
        crate::attached_loops::private(&mut command);
        command
    }

    /// Run syncbench to completion; panics with its stderr unless it exits 0.
    fn ok(args: &[&str]) -> String {
        let out = syncbench().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "syncbench {args:?}: {:?}\n{stderr}", out.status);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// An empty mount point in a private temporary directory, and that directory.
    fn mount_point() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let mount = std::fs::canonicalize(dir.path()).unwrap().join("mnt");
        std::fs::create_dir(&mount).unwrap();
        (dir, mount)
    }

    /// Everything a lab at `mount` (served by `server_pid`, if known) could leave behind, and every loop device
    /// this test's syncbench attached that is still attached, whatever its backing file reads.
    fn leftovers(mount: &Path, server_pid: Option<u32>) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while server_pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut found = Vec::new();
        if let Some(pid) = server_pid.filter(|p| Path::new(&format!("/proc/{p}")).exists()) {
            found.push(format!("server process {pid}"));
        }
        let state = syncbench::proof::lab::control::state_dir(mount);
        if state.exists() {
            found.push(format!("state dir {}", state.display()));
        }
        let tag = server_pid.map(|p| format!(".syncbench-lab-{p}-"));
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let mount_text = format!(" {} ", mount.display());
        for line in mounts.lines() {
            if line.contains(&mount_text) || tag.as_ref().is_some_and(|t| line.contains(t.as_str())) {
                found.push(format!("mount: {line}"));
            }
        }
        if let Some(tag) = &tag {
            let loops = Command::new(syncbench::proof::lab::prereq::find_program("losetup").unwrap())
                .arg("-a")
                .output()
                .unwrap();
            let loops = String::from_utf8_lossy(&loops.stdout).into_owned();
            found.extend(loops.lines().filter(|l| l.contains(tag.as_str())).map(|l| format!("loop: {l}")));
            for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(tag.as_str()) {
                    found.push(format!("dir: {name}"));
                }
            }
        }
        found.extend(crate::attached_loops::still_attached());
        found
    }

    /// Takes a lab down when a test fails half-way, so one failure does not leave mounts for the next; at the
    /// end of a test that did not fail, fails it if a loop device its syncbench attached is still attached.
    struct DownOnDrop(PathBuf);

    impl Drop for DownOnDrop {
        fn drop(&mut self) {
            if syncbench::proof::lab::control::state_dir(&self.0).exists() {
                let _ = syncbench().args(["lab", "down"]).arg(&self.0).output();
            }
            if !std::thread::panicking() {
                let left = crate::attached_loops::still_attached();
                assert!(left.is_empty(), "loop devices left attached: {left:#?}");
            }
        }
    }

    /// This mount point's line in the mount table (its mount id changes at every mount).
    fn mount_line(mount: &Path) -> Option<String> {
        let needle = format!(" {} ", mount.display());
        std::fs::read_to_string("/proc/self/mountinfo").unwrap().lines().find(|l| l.contains(&needle)).map(String::from)
    }

    fn server_pid(mount: &Path) -> u32 {
        syncbench::proof::lab::control::read_state(&syncbench::proof::lab::control::state_dir(mount)).unwrap().pid
    }

    /// Append `n` records to a file on the lab, fdatasync after each; the records whose fdatasync returned.
    fn write_records(path: &Path, n: usize) -> usize {
        let mut file = std::fs::OpenOptions::new().create_new(true).append(true).mode(0o644).open(path).unwrap();
        file.sync_all().unwrap();
        std::fs::File::open(path.parent().unwrap()).unwrap().sync_all().unwrap();
        for i in 0..n {
            let mut record = format!("record {i:08} ").into_bytes();
            record.resize(RECORD_BYTES - 1, b'.');
            record.push(b'\n');
            file.write_all(&record).unwrap();
            file.sync_data().unwrap();
        }
        n
    }

    /// Whole, correctly numbered records at the start of the file after the cut.
    fn surviving_records(path: &Path) -> usize {
        let data = std::fs::read(path).unwrap_or_default();
        data.chunks(RECORD_BYTES)
            .enumerate()
            .take_while(|(i, r)| r.len() == RECORD_BYTES && r.starts_with(format!("record {i:08} ").as_bytes()))
            .count()
    }

    /// Up, write and fdatasync `n` records, cut with `seed`: (records written, records surviving, cut JSON).
    fn records_through_a_cut(profile: &str, fs: &str, n: usize, seed: u64) -> (usize, usize, serde_json::Value) {
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        ok(&["lab", "up", "--profile", profile, "--fs", fs, "--size", "512MiB", m]);
        let _down = DownOnDrop(mount.clone());
        let pid = server_pid(&mount);
        let file = mount.join("records");
        let written = write_records(&file, n);
        let cut: serde_json::Value =
            serde_json::from_str(&ok(&["lab", "cut", m, "--seed", &seed.to_string(), "--json", "-"])).unwrap();
        let survived = surviving_records(&file);
        let stats: serde_json::Value = serde_json::from_str(&ok(&["lab", "stats", m, "--json", "-"])).unwrap();
        assert_eq!(stats["device"]["counters"]["cuts"], 1, "{stats}");
        assert!(stats["device"]["counters"]["flushes"].as_u64().unwrap() >= n as u64, "{stats}");
        ok(&["lab", "down", m]);
        let left = leftovers(&mount, Some(pid));
        assert!(left.is_empty(), "down left behind: {left:#?}");
        (written, survived, cut)
    }

    #[test]
    fn honest_disk_keeps_every_record_whose_fdatasync_returned() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        for fs in ["ext4", "xfs", "btrfs"] {
            let (written, survived, cut) = records_through_a_cut("ssd-200us", fs, 50, 7);
            assert_eq!(survived, written, "{fs}: honest disk lost synced records; cut: {cut}");
            assert_eq!(cut["device"]["lost_after_flush"], 0, "{fs}: {cut}");
        }
    }

    #[test]
    fn a_disk_that_ignores_flushes_loses_synced_records() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        let (written, survived, cut) = records_through_a_cut("cheating-ssd", "ext4", 50, 7);
        assert!(survived < written, "all {written} records survived a cut of a lying disk; cut: {cut}");
        assert!(cut["device"]["lost_after_flush"].as_u64().unwrap() > 0, "{cut}");
    }

    #[test]
    fn second_up_non_root_and_non_empty_directories_are_refused() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        let (dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        ok(&["lab", "up", "--profile", "zero", "--size", "400MiB", m]);
        let _down = DownOnDrop(mount.clone());
        let pid = server_pid(&mount);
        let second = syncbench().args(["lab", "up", "--profile", "zero", m]).output().unwrap();
        assert_eq!(second.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&second.stderr).contains("already up"), "{second:?}");
        ok(&["lab", "down", m]);
        assert!(leftovers(&mount, Some(pid)).is_empty());

        std::fs::write(mount.join("file"), b"x").unwrap();
        let full = syncbench().args(["lab", "up", "--profile", "zero", m]).output().unwrap();
        assert_eq!(full.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&full.stderr).contains("not empty"), "{full:?}");
        std::fs::remove_file(mount.join("file")).unwrap();

        let bin = assert_cmd::cargo::cargo_bin("syncbench");
        let user = Command::new(syncbench::proof::lab::prereq::find_program("setpriv").unwrap())
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(["lab", "up", "--profile", "zero", m])
            .output()
            .unwrap();
        assert_eq!(user.status.code(), Some(2), "{user:?}");
        let stderr = String::from_utf8_lossy(&user.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("root"), "{stderr}");
        drop(dir);
    }

    /// Wait until `cond` holds (or panic after 60 s).
    fn wait_until(what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn interrupt(pid: u32) {
        assert!(Command::new("kill").args(["-INT", &pid.to_string()]).status().unwrap().success());
    }

    #[test]
    fn ctrl_c_during_up_leaves_nothing_behind() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        let child = syncbench()
            .args(["lab", "up", "--profile", "zero", "--fs", "xfs", "--size", "1GiB", m])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The state directory appears just before the server starts building: interrupt mid-build.
        let state = syncbench::proof::lab::control::state_dir(&mount);
        wait_until("the lab's state directory", || state.exists());
        let server = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|p| {
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                String::from_utf8_lossy(&cmd).contains(m) && String::from_utf8_lossy(&cmd).contains("serve")
            });
        interrupt(child.id());
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
        let left = leftovers(&mount, server);
        assert!(left.is_empty(), "Ctrl-C during up left behind: {left:#?}");
    }

    #[test]
    fn ctrl_c_during_cut_leaves_a_working_lab_that_down_removes() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        ok(&["lab", "up", "--profile", "ssd-200us", "--size", "400MiB", m]);
        let _down = DownOnDrop(mount.clone());
        let pid = server_pid(&mount);
        write_records(&mount.join("records"), 20);
        let before = mount_line(&mount);
        let child = syncbench().args(["lab", "cut", m, "--seed", "3"]).stdout(Stdio::null()).spawn().unwrap();
        // Interrupt once the server is rebooting the disk: the old mount is gone or replaced.
        wait_until("the cut to begin", || mount_line(&mount) != before);
        interrupt(child.id());
        let status = child.wait_with_output().unwrap().status;
        assert!(status.code() == Some(130) || status.success(), "{status:?}");
        // The server finishes the reboot: the lab answers and the synced records are there.
        wait_until("the cut to finish", || ok(&["lab", "stats", m, "--json", "-"]).contains("\"cuts\": 1"));
        assert_eq!(surviving_records(&mount.join("records")), 20);
        ok(&["lab", "down", m]);
        let left = leftovers(&mount, Some(pid));
        assert!(left.is_empty(), "left behind: {left:#?}");
    }

    #[test]
    fn lab_run_passes_the_mount_and_the_exit_code_and_cleans_up() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        let bin = assert_cmd::cargo::cargo_bin("syncbench");
        let script = format!(
            "stat -f -c %T \"$SYNCBENCH_LAB_MOUNT\"; echo $SYNCBENCH_LAB_PROFILE; {} lab stats \"$SYNCBENCH_LAB_MOUNT\" --json -; exit 7",
            bin.display()
        );
        let child = syncbench()
            .args(["lab", "run", "--profile", "zero", "--size", "400MiB", "--", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let run_pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let (head, json) = stdout.split_at(stdout.find('{').expect("stats JSON"));
        assert!(head.contains("ext2/ext3") && head.contains("zero"), "{stdout}");
        let stats: serde_json::Value = serde_json::from_str(json).unwrap();
        let mount = PathBuf::from(stats["lab"]["mount"].as_str().unwrap());
        assert!(mount.file_name().unwrap().to_string_lossy().starts_with(&format!(".syncbench-lab-mnt-{run_pid}-")));
        let left = leftovers(&mount, Some(stats["lab"]["pid"].as_u64().unwrap() as u32));
        assert!(left.is_empty(), "lab run left behind: {left:#?}");
        assert!(!mount.exists(), "its mount point {} is left", mount.display());
    }

    /// The verdict codes `syncbench probe --quick` gives for a lab disk of `profile`.
    fn probe_codes(profile: &str) -> Vec<String> {
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        ok(&["lab", "up", "--profile", profile, "--size", "400MiB", m]);
        let _down = DownOnDrop(mount.clone());
        let doc: serde_json::Value = serde_json::from_str(&ok(&["probe", m, "--quick", "--json", "-"])).unwrap();
        assert_eq!(doc["environment"]["emulated_disk"]["profile"], profile, "{}", doc["environment"]);
        doc["verdicts"].as_array().unwrap().iter().map(|v| v["code"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn probe_names_the_emulated_disk_and_judges_its_flushes() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        let hdd = probe_codes("hdd-7200");
        assert!(hdd.contains(&"emulated_disk".into()) && hdd.contains(&"flush_rate_plausible".into()), "{hdd:?}");
        assert!(!hdd.contains(&"layered_loop".into()), "{hdd:?}");
        let ssd = probe_codes("ssd-200us");
        assert!(ssd.contains(&"emulated_disk".into()) && ssd.contains(&"fast_flush_needs_plp".into()), "{ssd:?}");
    }

    #[test]
    fn down_cleans_up_after_a_killed_server() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup, mkfs.ext4/xfs/btrfs and setpriv ({why})"));
        }
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        ok(&["lab", "up", "--profile", "zero", "--size", "400MiB", m]);
        let _down = DownOnDrop(mount.clone());
        let pid = server_pid(&mount);
        assert!(Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap().success());
        ok(&["lab", "down", m]);
        let left = leftovers(&mount, Some(pid));
        assert!(left.is_empty(), "down after SIGKILL left behind: {left:#?}");
        // What the dead server recorded (FUSE mount, loop device, file system) went with its lab.
        let records: Vec<String> = std::fs::read_dir(crate::attached_loops::registry())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(&format!("{pid}-")))
            .collect();
        assert!(records.is_empty(), "the dead server's records outlived lab down: {records:?}");
    }

    /// An ext4 lab needs fewer programs than the tests across file systems.
    fn missing_ext4_prerequisite() -> Option<String> {
        crate::missing_stack_prerequisite(&["losetup", "mkfs.ext4", "mount", "umount"])
    }

    /// The median commit latency `run` measures for one fdatasync case on the lab at `m`, in ns.
    fn run_median_ns(m: &str) -> u64 {
        let args = ["run", "--methods", "fdatasync", "--sections", "a", "--rounds", "3", "--secs", "0.3"];
        let doc: serde_json::Value = serde_json::from_str(&ok(&[&args[..], &[m, "--json", "-"]].concat())).unwrap();
        doc["results"][0]["latency_ns"]["p50"].as_u64().unwrap()
    }

    /// The lab's own flush counters: (flushes completed, total ns the model charged them).
    fn flushes_charged(m: &str) -> (u64, f64) {
        let doc: serde_json::Value = serde_json::from_str(&ok(&["lab", "stats", m, "--json", "-"])).unwrap();
        let n = doc["device"]["flushes_completed"].as_u64().unwrap();
        (n, n as f64 * doc["device"]["flush_latency_ns"]["mean"].as_f64().unwrap())
    }

    /// The mean flush cost the model charged between two readings of [`flushes_charged`].
    fn mean_between(a: (u64, f64), b: (u64, f64)) -> f64 {
        assert!(b.0 > a.0, "no flush between the readings");
        (b.1 - a.1) / (b.0 - a.0) as f64
    }

    #[test]
    fn set_changes_the_flush_cost_of_a_running_lab_and_runs_median_follows() {
        if let Some(why) = missing_ext4_prerequisite() {
            return skip(format_args!("lab set needs root, /dev/fuse, losetup and mkfs.ext4 ({why})"));
        }
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        ok(&["lab", "up", "--profile", "ssd-200us", "--size", "512MiB", m]);
        let _down = DownOnDrop(mount.clone());
        let mount_before = mount_line(&mount);
        let start = flushes_charged(m);
        let before = run_median_ns(m);
        let fast = flushes_charged(m);
        let said = ok(&["lab", "set", m, "--flush-us", "4000"]);
        assert!(said.contains("flush 4000 µs") && said.contains("(was honest, flush 200 µs"), "{said}");
        let stats = ok(&["lab", "stats", m]);
        assert!(stats.lines().next().unwrap().contains("flush 4000 µs"), "stats show the live value:\n{stats}");
        let after = run_median_ns(m);
        let slow = flushes_charged(m);
        // The model charges every flush begun after the change 4 ms, and an fdatasync waits for one: a
        // median below that means the change did not reach the device. `before` is only shown: on a loaded
        // machine the path above the model (FUSE, loop) can make even 200 µs flushes take milliseconds.
        assert!(after >= 4_000_000, "run's median {before} ns before, {after} ns after");
        // What the device itself charged, phase by phase (exact: the model's own clock).
        let (charged_fast, charged_slow) = (mean_between(start, fast), mean_between(fast, slow));
        assert!((200_000.0..1_000_000.0).contains(&charged_fast), "charged {charged_fast} ns per flush at 200 µs");
        assert!(charged_slow >= 3_900_000.0, "charged {charged_slow} ns per flush after the change to 4000 µs");
        assert_eq!(mount_line(&mount), mount_before, "set must not remount");
        ok(&["lab", "set", m, "--flush-us", "200"]);
        run_median_ns(m);
        let back = mean_between(slow, flushes_charged(m));
        assert!(back < 1_000_000.0, "charged {back} ns per flush after switching back to 200 µs");
        ok(&["lab", "down", m]);
    }

    #[test]
    fn set_without_a_change_or_without_a_lab_is_a_usage_error() {
        if let Some(why) = missing_ext4_prerequisite() {
            return skip(format_args!("lab set needs root, /dev/fuse, losetup and mkfs.ext4 ({why})"));
        }
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        let out = syncbench().args(["lab", "set", m, "--flush-us", "10"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("no lab is up at"), "{out:?}");
        let out = syncbench().args(["lab", "set", m]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--flush-us, --write-us, --honesty or --untorn"),
            "{out:?}"
        );
    }

    const PAGE: usize = 16 << 10;
    const PAGES: u64 = 256;
    const CHUNK: usize = 4 << 10;

    /// Overwrite random 16 KiB pages of `path` (O_DIRECT, fdatasync after each) until a write fails (the
    /// power went) or `stop`; every 4 KiB of a write holds one 32-bit number, new for each write.
    fn write_pages_until_cut(path: PathBuf, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u32 {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(path).unwrap();
        let mut raw = vec![0u8; PAGE + 4096];
        let skip = raw.as_ptr().align_offset(4096);
        let (mut number, mut rng) = (0u32, 0x9e37_79b9_u64);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            number += 1;
            rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let page = (rng >> 33) % PAGES;
            let buf = &mut raw[skip..skip + PAGE];
            for word in buf.chunks_mut(4) {
                word.copy_from_slice(&number.to_le_bytes());
            }
            if file.write_at(buf, page * PAGE as u64).is_err() || file.sync_data().is_err() {
                break;
            }
        }
        number
    }

    /// The number each 4 KiB chunk of each page holds, or `None` for a chunk that is not one number.
    fn page_chunks(path: &Path) -> Vec<Vec<Option<u32>>> {
        let data = std::fs::read(path).unwrap();
        data.chunks(PAGE)
            .map(|page| {
                page.chunks(CHUNK)
                    .map(|c| {
                        let first = &c[..4];
                        c.chunks(4).all(|w| w == first).then(|| u32::from_le_bytes(first.try_into().unwrap()))
                    })
                    .collect()
            })
            .collect()
    }

    /// An aimed cut of the lab at `m` while pages are being overwritten; the cut's JSON.
    fn aimed_cut_under_page_writes(mount: &Path, seed: u64) -> serde_json::Value {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (path, stop) = (mount.join("pages"), stop.clone());
            std::thread::spawn(move || write_pages_until_cut(path, stop))
        };
        let m = mount.to_str().unwrap();
        let args = ["lab", "cut", m, "--aim-data-write", "--aim-min-bytes", "16KiB", "--aim-wait", "60s"];
        let cut = ok(&[&args[..], &["--seed", &seed.to_string(), "--json", "-"]].concat());
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(writer.join().unwrap() >= 1, "the writer wrote pages");
        serde_json::from_str(&cut).unwrap()
    }

    #[test]
    fn an_aimed_cut_tears_a_page_at_4_kib_and_not_at_16_kib() {
        if let Some(why) = missing_ext4_prerequisite() {
            return skip(format_args!("lab needs root, /dev/fuse, losetup and mkfs.ext4 ({why})"));
        }
        let (_dir, mount) = mount_point();
        let m = mount.to_str().unwrap();
        ok(&["lab", "up", "--profile", "ssd-200us", "--untorn", "4KiB", "--size", "400MiB", m]);
        let _down = DownOnDrop(mount.clone());
        assert!(ok(&["lab", "stats", m]).lines().next().unwrap().contains("untorn 4 KiB"));
        let pages = mount.join("pages");
        let fresh_pages = || {
            std::fs::write(&pages, vec![0u8; PAGE * PAGES as usize]).unwrap();
            std::fs::File::open(&pages).unwrap().sync_all().unwrap();
        };
        fresh_pages();

        let cut = aimed_cut_under_page_writes(&mount, 11);
        let (aim, device) = (&cut["aim"], &cut["device"]);
        assert_eq!(aim["met"], true, "{cut}");
        assert_eq!(
            (device["aimed_at"]["len_bytes"].as_u64(), device["aimed_at"]["torn"].as_bool()),
            (Some(16384), Some(true)),
            "{cut}"
        );
        let torn = &device["torn"];
        assert_eq!((torn["unit_bytes"].as_u64(), torn["units"].as_u64()), (Some(4096), Some(4)), "{cut}");
        let kept = torn["units_persisted"].as_u64().unwrap() as usize;
        // Every 4 KiB unit whole; exactly one page mixed: its first `kept` units new, the rest old.
        let chunks = page_chunks(&pages);
        assert!(chunks.iter().flatten().all(Option::is_some), "a 4 KiB unit was torn inside");
        let mixed: Vec<&Vec<Option<u32>>> = chunks.iter().filter(|p| p.iter().any(|c| *c != p[0])).collect();
        assert_eq!(mixed.len(), 1, "{mixed:?}; {cut}");
        let page = mixed[0];
        assert!(page[..kept].iter().all(|c| *c == page[0]) && page[kept..].iter().all(|c| *c == page[kept]));
        assert!(page[0] > page[kept], "the first units are the newer write: {page:?}");

        // The same disk promising 16 KiB: a page aligned to 16 KiB on the disk never tears.
        ok(&["lab", "set", m, "--untorn", "16KiB"]);
        fresh_pages();
        let cut = aimed_cut_under_page_writes(&mount, 11);
        let aimed = &cut["device"]["aimed_at"];
        assert_eq!(aimed["offset"].as_u64().unwrap() % 16384, 0, "ext4 placed the file off 16 KiB: {cut}");
        assert_eq!((cut["aim"]["met"].as_bool(), aimed["torn"].as_bool()), (Some(true), Some(false)), "{cut}");
        assert!(page_chunks(&pages).iter().all(|p| p.iter().all(|c| c.is_some() && *c == p[0])), "{cut}");

        // Nothing to aim at: the cut comes at the deadline and says so. (No request is 32 MiB; with the
        // default 8 KiB, the file system's own background writes were aimed at once under load.)
        let args =
            ["--aim-data-write", "--aim-min-bytes", "32MiB", "--aim-wait", "300ms", "--seed", "1", "--json", "-"];
        let missed = ok(&[&["lab", "cut", m][..], &args].concat());
        let missed: serde_json::Value = serde_json::from_str(&missed).unwrap();
        assert_eq!((missed["aim"]["met"].as_bool(), missed["device"].get("aimed_at")), (Some(false), None), "{missed}");
        ok(&["lab", "down", m]);
    }
}
