use super::*;

const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /tmp/.syncbench-tracefs-77-0 rw,relatime - tracefs tracefs rw
41 22 0:36 / /tmp/a\\040b rw - fuse syncbench-lab rw,user_id=0
42 22 7:0 / /tmp/a\\040b rw - ext4 /dev/loop0 rw
";

#[test]
fn mount_at_reads_type_and_source_of_the_topmost_mount_with_escapes_undone() {
    assert_eq!(
        mount_in(MOUNTINFO, Path::new("/tmp/.syncbench-tracefs-77-0")),
        Some(("tracefs".to_string(), "tracefs".to_string()))
    );
    assert_eq!(mount_in(MOUNTINFO, Path::new("/tmp/a b")), Some(("ext4".to_string(), "/dev/loop0".to_string())));
    assert_eq!(mount_in(MOUNTINFO, Path::new("/tmp")), None);
    assert_eq!(mount_points(MOUNTINFO)[2], Path::new("/tmp/a b"));
    assert_eq!(fuse_connection(MOUNTINFO, Path::new("/tmp/.syncbench-tracefs-77-0")), Some(35));
}

/// A pid no process has: the kernel's pid_max is at most 2^22.
const DEAD_PID: u32 = 4_194_305;

fn plant(root: &Path, name: &str, pid: u32, object: Object) -> PathBuf {
    std::fs::create_dir_all(root).unwrap();
    let record = Record { pid, start_ticks: 0, command: "run".into(), object };
    let file = root.join(name);
    std::fs::write(&file, serde_json::to_string(&record).unwrap()).unwrap();
    file
}

#[test]
fn a_dead_process_s_directory_is_a_leftover_a_live_one_s_is_not_and_a_gone_one_is_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("registry");
    let dir = tmp.path().join(".syncbench-lab-1-0");
    std::fs::create_dir(&dir).unwrap();
    let dead = plant(&root, "a.json", DEAD_PID, Object::Path { path: dir.clone() });
    let live = plant(&root, "b.json", std::process::id(), Object::Path { path: dir.clone() });
    let gone = plant(&root, "c.json", DEAD_PID, Object::Path { path: tmp.path().join(".syncbench-gone") });
    let found = leftovers_in(&root);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].file.as_deref(), Some(dead.as_path()));
    let line = found[0].describe();
    assert_eq!(
        line,
        format!(
            "left by syncbench run (pid {DEAD_PID}, gone): directory {0}; remove with: rm -r --one-file-system {0}",
            dir.display()
        )
    );
    assert!(live.exists() && !gone.exists(), "the live record stays, the stale one is deleted");
    let leftover = found.into_iter().next().unwrap();
    assert_eq!(leftover.remove(), Ok(format!("removed directory {}", dir.display())));
    assert!(!dir.exists() && !dead.exists());
}

#[test]
fn a_directory_not_named_by_syncbench_is_never_a_leftover() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("registry");
    let dir = tmp.path().join("users-data");
    std::fs::create_dir(&dir).unwrap();
    plant(&root, "a.json", DEAD_PID, Object::Path { path: dir.clone() });
    assert!(leftovers_in(&root).is_empty());
    assert!(dir.exists());
}

#[test]
fn a_reused_pid_does_not_keep_a_record_alive() {
    let me = std::process::id();
    let ticks = start_ticks(me).unwrap();
    assert!(is_alive(me, ticks) && is_alive(me, 0));
    assert!(!is_alive(me, ticks + 1), "same pid, other start time: another process");
    assert!(!is_alive(DEAD_PID, 0));
}

#[test]
fn a_loop_record_with_no_device_on_its_file_is_stale() {
    let leftover = Leftover {
        file: None,
        record: Record {
            pid: DEAD_PID,
            start_ticks: 0,
            command: "fsync-errors".into(),
            object: Object::Loop { backing_file: "/tmp/.syncbench-no-such-image".into(), device: None, diskseq: None },
        },
        lab: None,
    };
    assert!(!leftover.still_there());
}

#[test]
fn paths_with_spaces_are_quoted_for_the_shell() {
    assert_eq!(quote(Path::new("/tmp/.syncbench-x-1-0")), "/tmp/.syncbench-x-1-0");
    assert_eq!(quote(Path::new("/tmp/a b'c")), r"'/tmp/a b'\''c'");
}

#[test]
fn a_process_with_a_pending_sigkill_is_dying_not_a_live_owner() {
    // From a `fsync-errors` killed mid-fsync on its own FUSE server's disk, stuck in jbd2_log_wait_commit.
    let stuck = "State:\tD (disk sleep)\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000100\n";
    assert!(super::sigkill_pending(stuck));
    let thread_only = "SigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n";
    assert!(super::sigkill_pending(thread_only));
    let term = "State:\tS (sleeping)\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000004000\n";
    assert!(!super::sigkill_pending(term));
    assert!(!super::sigkill_pending(""));
}
