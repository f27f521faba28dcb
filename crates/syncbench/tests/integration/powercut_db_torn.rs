//! `powercut db --untorn SIZE --aim data-writes` as root on a lab disk with PostgreSQL: the untorn unit is
//! recorded in the cell and the table, every cut says what its aim hit, and `full_page_writes=on` survives
//! aimed cuts on a 4 KiB-tearing disk. Bad values of the new flags are one line and exit 2.

#![cfg(all(feature = "fuse", feature = "postgres"))]

use crate::powercut_db::{run, text};
use crate::skip;

fn missing_prerequisite() -> Option<String> {
    if let Some(why) = crate::missing_stack_prerequisite(&["losetup", "mkfs.ext4", "mount", "umount"]) {
        return Some(why);
    }
    let installed = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").is_file());
    (!installed).then(|| "PostgreSQL server not installed".into())
}

#[test]
fn full_page_writes_on_survives_cuts_aimed_at_data_pages_on_a_tearing_disk() {
    if let Some(why) = missing_prerequisite() {
        return skip(format_args!("needs root, /dev/fuse, losetup, mkfs.ext4 and PostgreSQL ({why})"));
    }
    let args = [
        "db",
        "--db",
        "postgres",
        "--set",
        "full_page_writes=on",
        "--profile",
        "nvme-consumer",
        "--fs",
        "ext4",
        "--untorn",
        "4KiB",
        "--aim",
        "data-writes",
        "--cuts",
        "3",
    ];
    let (out, cells, left) = run(&args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(cells.len(), 1);
    let cell = &cells[0];
    assert_eq!(cell["untorn_bytes"], 4096);
    assert_eq!(cell["aim"], "data writes >= 8 KiB");
    let cuts = cell["cuts"].as_array().unwrap();
    assert_eq!(cuts.len(), 3);
    for cut in cuts {
        let aim = &cut["aim"];
        assert!(aim["met"].is_boolean(), "every cut says whether its aim was met: {cut}");
        if aim["met"] == true {
            assert!(aim["write_bytes"].as_u64().unwrap() >= 8192, "{aim}");
        }
        assert!(cut["recovery_failure"].is_null() && cut["integrity"]["ok"] == true, "{}", text(&out));
        assert_eq!(cut["verification"]["lost"], 0, "{}", text(&out));
    }
    let table = text(&out);
    assert!(table.contains("untorn") && table.contains("4 KiB"), "{table}");
    assert!(table.contains("holds: every acknowledged write kept in 3 cuts"), "{table}");
    assert!(table.contains("aimed at data writes >= 8 KiB: "), "{table}");
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bad_untorn_and_aim_values_are_one_line_and_exit_2() {
    for (flag, value, says) in
        [("--untorn", "12KiB", "power of two from 512B to 1MiB"), ("--aim", "log-writes", "data-writes")]
    {
        let args = ["db", "--db", "sqlite", "--profile", "hdd-7200", "--fs", "ext4", flag, value];
        let (out, _, left) = run(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(says), "{flag} {value}: {}", text(&out));
        assert!(left.is_empty(), "{left:?}");
    }
}
