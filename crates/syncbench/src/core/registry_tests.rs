use super::*;

#[test]
fn record_writes_a_record_the_guard_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("registry");
    let guard = record_in(&root, Object::Path { path: tmp.path().join(".syncbench-x") }).unwrap();
    let files: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert_eq!(files.len(), 1);
    drop(guard);
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
}

#[test]
fn a_process_s_start_time_is_read_from_proc() {
    let me = std::process::id();
    assert!(start_ticks(me).is_some_and(|t| t > 0));
    assert_eq!(start_ticks(4_194_305), None, "no such process");
}

#[test]
fn the_loop_history_lists_every_attach_in_order_and_skips_unreadable_lines() {
    let tmp = tempfile::tempdir().unwrap();
    append_loop_history(tmp.path(), "/dev/loop3", 17);
    std::fs::OpenOptions::new()
        .append(true)
        .open(tmp.path().join(LOOP_HISTORY))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"half a line\n"))
        .unwrap();
    append_loop_history(tmp.path(), "/dev/loop3", 18);
    assert_eq!(loops_attached_in(tmp.path()), [("/dev/loop3".to_string(), 17), ("/dev/loop3".to_string(), 18)]);
    assert!(loops_attached_in(&tmp.path().join("none")).is_empty());
}
