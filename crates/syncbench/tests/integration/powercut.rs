//! `syncbench powercut`: write with a stdout or TCP witness and verify (anywhere); refusals; planted loss
//! makes verify fail; and, as root, the whole loop on lab disks (CI runs it).

use assert_cmd::Command;
use predicates::str::contains;
use std::path::{Path, PathBuf};

fn syncbench() -> Command {
    Command::cargo_bin("syncbench").unwrap()
}

/// One second of `powercut write` into a fresh directory: (the directory, the acks file).
fn written(method: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    let out = syncbench()
        .args(["powercut", "write", dir.to_str().unwrap(), "--secs", "1", "--method", method])
        .assert()
        .success()
        .stderr(contains(if method == "write" { "write is NOT a durable method" } else { "acknowledged in" }));
    let acks = tmp.path().join("acks");
    std::fs::write(&acks, &out.get_output().stdout).unwrap();
    (tmp, dir, acks)
}

fn verify(dir: &Path, acks: &Path) -> assert_cmd::assert::Assert {
    syncbench().args(["powercut", "verify", dir.to_str().unwrap(), "--acks", acks.to_str().unwrap()]).assert()
}

fn run_dir(dir: &Path) -> PathBuf {
    let entry = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap();
    entry.path()
}

#[test]
fn an_undisturbed_run_verifies_and_a_planted_loss_fails_verify() {
    let (_tmp, dir, acks) = written("fdatasync");
    verify(&dir, &acks)
        .success()
        .stdout(contains("every acknowledged record is present and intact"))
        .stdout(contains("└─"));
    // The first append record zeroed: an acknowledged record lost.
    let segment = run_dir(&dir).join("append-0.dat");
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[..4096].fill(0);
    std::fs::write(&segment, bytes).unwrap();
    verify(&dir, &acks).code(1).stdout(contains("append record 1 (slot 0): lost"));
}

#[test]
fn a_method_that_is_not_durable_is_labelled() {
    let (_tmp, dir, acks) = written("write");
    verify(&dir, &acks).success().stdout(contains("written with write (NOT durable"));
}

#[test]
fn missing_dir_missing_acks_and_acks_of_another_run_or_dir_are_refused_with_one_line() {
    let (tmp, dir, acks) = written("fdatasync");
    let one_line = |a: assert_cmd::assert::Assert, what: &str| {
        let a = a.code(2).stderr(contains(what.to_string()));
        assert_eq!(String::from_utf8_lossy(&a.get_output().stderr).lines().count(), 1);
    };
    one_line(verify(&tmp.path().join("nope"), &acks), "cannot use");
    one_line(verify(&dir, &tmp.path().join("nope")), "cannot read the acks file");
    one_line(verify(tmp.path(), &acks), "acks of a run in");
    std::fs::write(tmp.path().join("empty"), "").unwrap();
    one_line(verify(&dir, &tmp.path().join("empty")), "not a powercut acks file");
    // Acks of another run in the same directory: its files are not there.
    let text = std::fs::read_to_string(&acks).unwrap();
    let run = text.split(' ').find_map(|w| w.strip_prefix("run=")).unwrap().to_string();
    let forged = text.replacen(&run, "0123456789abcdef", 1);
    std::fs::write(tmp.path().join("other"), forged).unwrap();
    one_line(verify(&dir, &tmp.path().join("other")), "no files of run 0123456789abcdef");
    syncbench()
        .args(["powercut", "write", dir.to_str().unwrap(), "--method", "fast"])
        .assert()
        .code(2)
        .stderr(contains("invalid value 'fast' for --method <METHOD>; use one of open_datasync, fdatasync,"));
}

#[test]
fn a_tcp_witness_records_what_the_writer_acknowledged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    let acks = tmp.path().join("acks");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let bin = assert_cmd::cargo::cargo_bin("syncbench");
    let mut listener = std::process::Command::new(&bin)
        .args(["powercut", "listen", "--port", &port, "--out", acks.to_str().unwrap()])
        .spawn()
        .unwrap();
    let witness = format!("tcp:127.0.0.1:{port}");
    let started = std::time::Instant::now();
    // The listener needs a moment to bind: retry while it refuses the connection.
    loop {
        let out = syncbench()
            .args(["powercut", "write", dir.to_str().unwrap(), "--secs", "1", "--witness", &witness])
            .output()
            .unwrap();
        if out.status.success() {
            break;
        }
        assert!(started.elapsed().as_secs() < 20, "{}", String::from_utf8_lossy(&out.stderr));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(listener.wait().unwrap().success());
    verify(&dir, &acks).success().stdout(contains("every acknowledged record is present and intact"));
    // An existing acks file is never reused.
    syncbench()
        .args(["powercut", "listen", "--port", &port, "--out", acks.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("exists"));
}

#[cfg(feature = "fuse")]
mod as_root {
    use super::syncbench;
    use crate::skip;

    fn missing_prerequisite() -> Option<String> {
        crate::missing_stack_prerequisite(&["losetup", "mkfs.ext4", "mount", "umount"])
    }

    /// `powercut lab` with `args` and `--json`: its exit code, its table, and the cells of the JSON; fails if a
    /// loop device it attached is still attached.
    fn lab(args: &[&str]) -> (Option<i32>, String, Vec<serde_json::Value>) {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("cuts.json");
        let mut command = syncbench();
        command.env(syncbench::core::registry::ROOT_ENV, crate::attached_loops::registry());
        let out =
            command.args(["powercut", "lab"]).args(args).args(["--json", json.to_str().unwrap()]).output().unwrap();
        let table = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let left = crate::attached_loops::still_attached();
        assert!(left.is_empty(), "loop devices left attached: {left:#?}\n{table}");
        let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no JSON ({e}): {table}"));
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        (out.status.code(), table, doc["cells"].as_array().unwrap().clone())
    }

    /// Lost or torn acknowledged records per cut, and the acknowledged records of the whole cell.
    fn losses(cell: &serde_json::Value, cuts: usize) -> (Vec<u64>, u64) {
        let list = cell["cuts"].as_array().unwrap();
        assert_eq!(list.len(), cuts, "{cell}");
        let lost = list.iter().map(|c| c["lost"].as_u64().unwrap() + c["torn"].as_u64().unwrap()).collect();
        (lost, list.iter().map(|c| c["acknowledged"].as_u64().unwrap()).sum())
    }

    /// A few cuts on every profile of the acceptance grid: each honest or write-through disk keeps every
    /// acknowledged record, the disk that ignores flushes loses some in every cut.
    #[test]
    fn lab_cuts_lose_nothing_on_honest_disks_and_find_the_lying_disk() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("powercut lab needs root, /dev/fuse, losetup and mkfs.ext4 ({why})"));
        }
        let profiles = "hdd-7200,ssd-200us,nvme-plp,raid-bbu,cheating-ssd";
        let (code, table, cells) =
            lab(&["--profile", profiles, "--fs", "ext4", "--cuts", "2", "--method", "fdatasync"]);
        assert_eq!(code, Some(0), "{table}");
        assert_eq!(cells.len(), 5, "{table}");
        for cell in &cells {
            let (lost, acked) = losses(cell, 2);
            assert!(acked > 0, "{cell}");
            match cell["profile"].as_str().unwrap() {
                "cheating-ssd" => assert!(lost.iter().all(|&l| l > 0), "every cut loses records: {table}"),
                _ => assert_eq!(lost, [0, 0], "{table}"),
            }
        }
        assert_eq!(table.matches("holds: no acknowledged record lost in 2 cuts").count(), 4, "{table}");
        assert!(table.contains("the disk (cheating-ssd) ignores flushes"), "{table}");
    }

    /// `--method write` (no sync) on an honest disk loses acknowledged records and is labelled not durable,
    /// without failing the run.
    #[test]
    fn lab_cuts_label_the_not_durable_method_and_find_its_losses() {
        if let Some(why) = missing_prerequisite() {
            return skip(format_args!("powercut lab needs root, /dev/fuse, losetup and mkfs.ext4 ({why})"));
        }
        let (code, table, cells) = lab(&["--profile", "hdd-7200", "--fs", "ext4", "--cuts", "2", "--method", "write"]);
        assert_eq!(code, Some(0), "{table}");
        let (lost, acked) = losses(&cells[0], 2);
        assert!(acked > 0 && lost.iter().all(|&l| l > 0), "every cut loses records: {table}");
        assert_eq!(cells[0]["durable"], false, "{table}");
        assert!(table.contains("write (not durable)") && table.contains("write is not durable"), "{table}");
    }
}
