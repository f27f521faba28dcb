//! The loop devices a test's own syncbench processes attached, whatever their backing files read by the end.
//!
//! A leftover check that looks for loop devices by the test's paths cannot see a loop device whose FUSE mount
//! went lazily: its backing file then reads `/image` (issue #37: 22 of them piled up while the suite passed).
//! So each test thread gives the commands it runs a private registry (`SYNCBENCH_STATE_DIR`), where
//! syncbench notes every loop device it attaches, by device and disk sequence number
//! (`core::registry::LOOP_HISTORY`). The check lists those still attached: new attaches only, the test's
//! own only, never the loop devices other tests running in parallel attach.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use syncbench::core::registry::{ROOT_ENV, loop_is_attached, loops_attached_in};

thread_local! {
    static REGISTRY: tempfile::TempDir =
        tempfile::Builder::new().prefix("syncbench-test-registry-").tempdir().expect("a private registry");
}

/// This test thread's private registry (libtest runs each test in a thread of its own).
pub fn registry() -> PathBuf {
    REGISTRY.with(|dir| dir.path().to_path_buf())
}

/// `command` with this test thread's private registry.
pub fn private(command: &mut Command) -> &mut Command {
    command.env(ROOT_ENV, registry())
}

/// The loop devices attached through this thread's registry that are still attached (after up to 5 s for a
/// device whose detach only set autoclear to go with its last user), one line each.
pub fn still_attached() -> Vec<String> {
    still_attached_in(&registry())
}

/// [`still_attached`] for the registry at `root`.
pub fn still_attached_in(root: &Path) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !attached_now_in(root).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    attached_now_in(root)
}

/// The loop devices attached through the registry at `root` that are attached right now, one line each.
pub fn attached_now_in(root: &Path) -> Vec<String> {
    let attached = loops_attached_in(root).into_iter().filter(|(device, seq)| loop_is_attached(device, *seq));
    attached.map(|(device, seq)| describe(&device, seq)).collect()
}

/// `loop /dev/loop3: diskseq 17 still attached, backing file /image, autoclear 0`.
fn describe(device: &str, diskseq: u64) -> String {
    let sys = Path::new("/sys/block").join(device.trim_start_matches("/dev/"));
    let read = |name: &str| std::fs::read_to_string(sys.join(name)).unwrap_or_default().trim().to_string();
    format!(
        "loop {device}: diskseq {diskseq} still attached, backing file {}, autoclear {}",
        read("loop/backing_file"),
        read("loop/autoclear")
    )
}

#[test]
fn a_loop_device_noted_in_the_registry_is_found_whatever_its_backing_file_reads() {
    if let Some(why) = crate::missing_stack_prerequisite(&["losetup"]) {
        return crate::skip(format_args!("attaching a loop device needs root and losetup ({why})"));
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("image");
    std::fs::write(&image, vec![0u8; 1 << 20]).unwrap();
    let losetup = syncbench::proof::lab::prereq::find_program("losetup").unwrap();
    let out = Command::new(&losetup).args(["--find", "--show"]).arg(&image).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let seq = syncbench::core::registry::loop_diskseq(&device).unwrap().expect("a kernel with diskseq");
    let root = tempfile::tempdir().unwrap();
    let other = root.path().join(syncbench::core::registry::LOOP_HISTORY);
    // Another device and an earlier attach of this one: not attached now, not reported.
    std::fs::write(&other, format!("/dev/loop250 1\n{device} {}\n{device} {seq}\n", seq - 1)).unwrap();
    let found = still_attached_in(root.path());
    let _ = Command::new(&losetup).args(["-d", &device]).status();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with(&format!("loop {device}: diskseq {seq} still attached")), "{found:?}");
    assert!(still_attached_in(root.path()).is_empty(), "detached: nothing left");
}
