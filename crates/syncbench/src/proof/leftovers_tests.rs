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

/// A dead process's loop record that names only its backing file is given the device and its disk sequence
/// number when first listed: after that the device is found whatever its backing file reads (a lazily
/// unmounted FUSE image reads `/image`; here the file is renamed), and removed.
#[test]
fn a_loop_record_without_its_device_is_named_before_the_backing_file_s_path_changes() {
    if !syncbench_sys::test_support::is_root_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("image");
    std::fs::write(&image, vec![0u8; 1 << 20]).unwrap();
    let out = std::process::Command::new(crate::proof::lab::prereq::find_program("losetup").unwrap())
        .args(["--find", "--show"])
        .arg(&image)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let seq = crate::core::registry::loop_diskseq(&device).unwrap().expect("a kernel with diskseq");
    let root = tmp.path().join("registry");
    let file =
        plant(&root, "a.json", DEAD_PID, Object::Loop { backing_file: image.clone(), device: None, diskseq: None });
    let found = leftovers_in(&root);
    let named = Object::Loop { backing_file: image.clone(), device: Some(device.clone()), diskseq: Some(seq) };
    let on_disk: Record = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    std::fs::rename(&image, tmp.path().join("moved")).unwrap();
    let removed = leftovers_in(&root).into_iter().map(Leftover::remove).collect::<Vec<_>>();
    let still = crate::core::registry::loop_is_attached(&device, seq);
    if still {
        let _ = program("losetup", &["-d", &device]);
    }
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].record.object, named);
    assert_eq!(on_disk.object, named, "the record on disk names the device");
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(
        removed[0].as_ref().is_ok_and(|r| r.starts_with(&format!("removed loop device {device} on "))),
        "{removed:?}"
    );
    assert!(!still, "cleanup detached it");
    assert!(!file.exists(), "and deleted its record");
}
