//! The stack's untorn unit for the torn-page settings (`full_page_writes`, `innodb_doublewrite`): what
//! syncbench can find out about the largest write a power cut cannot tear, compared with the database's
//! page. In order of authority: statx for a file in DIR (what the file system promises, `RWF_ATOMIC`), a
//! `syncbench lab` disk's device model (`--untorn`, read from the lab's state by the probe), and the block
//! device's sysfs `atomic_write_unit_max_bytes` (which the file system may not pass on).

use crate::core::environment::Environment;
use crate::core::units::format_size;

/// Whether statx says a write of `page_bytes` to a file here cannot be torn: the only source that
/// covers the whole stack (device and file system), and so the only one that can justify turning a
/// torn-page protection off.
pub fn file_promises(env: &Environment, page_bytes: u64) -> bool {
    match (env.atomic_write_unit_min_bytes, env.atomic_write_unit_max_bytes) {
        (Some(min), Some(max)) if max > 0 => u64::from(min) <= page_bytes && page_bytes <= u64::from(max),
        _ => false,
    }
}

/// What is known of the untorn unit here, compared with a page of `page_bytes`, as one sentence (no
/// full stop).
pub fn sentence(env: &Environment, page_bytes: u64) -> String {
    let page = format_size(page_bytes);
    let statx = match (env.atomic_write_unit_min_bytes, env.atomic_write_unit_max_bytes) {
        (Some(min), Some(max)) if max > 0 => {
            let covers = if file_promises(env, page_bytes) { "covering" } else { "not covering" };
            return format!(
                "statx reports untorn writes from {min} to {max} bytes for files here, {covers} the {page} page"
            );
        }
        _ => "statx reports no untorn-write (RWF_ATOMIC) support for files here".to_string(),
    };
    let below = lab_unit(env, page_bytes).or_else(|| device_unit(env, page_bytes));
    match below {
        Some(what) => format!("{statx}; {what}"),
        None => format!("{statx}, and no device below names an untorn unit larger than a sector"),
    }
}

/// A lab disk's untorn unit, against the page.
fn lab_unit(env: &Environment, page_bytes: u64) -> Option<String> {
    let lab = env.emulated_disk.as_ref()?;
    let unit = lab.untorn_unit_bytes?;
    let (size, page) = (format_size(unit), format_size(page_bytes));
    Some(if unit >= page_bytes {
        format!(
            "the lab disk below (profile {}) writes {size} units untorn, at least the {page} page, but nothing \
             keeps a page in one aligned device write through the file system: only a torn-page test on such a \
             disk shows whether pages survive without the protection",
            lab.profile
        )
    } else {
        format!(
            "the lab disk below (profile {}) tears at {size} boundaries, inside a {page} page: a power cut can \
             tear a page",
            lab.profile
        )
    })
}

/// A block device's sysfs untorn limit above one sector, which the file system does not offer.
fn device_unit(env: &Environment, page_bytes: u64) -> Option<String> {
    let d = env
        .devices
        .iter()
        .find(|d| d.atomic_write_unit_max_bytes.is_some_and(|max| max > d.logical_block_size_bytes.unwrap_or(512)))?;
    let max = u64::from(d.atomic_write_unit_max_bytes?);
    let compared = if max >= page_bytes { "at least" } else { "less than" };
    Some(format!(
        "the device {} writes up to {} untorn (sysfs atomic_write_unit_max_bytes), {compared} the {} page, but \
         only for writes that ask for it through a file system that offers it",
        d.name,
        format_size(max),
        format_size(page_bytes)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::environment::{Device, EmulatedDisk};

    fn lab(untorn: Option<u64>) -> Environment {
        let disk =
            EmulatedDisk { profile: "nvme-consumer".into(), untorn_unit_bytes: untorn, ..EmulatedDisk::default() };
        Environment { emulated_disk: Some(disk), ..Environment::default() }
    }

    #[test]
    fn statx_decides_when_it_answers() {
        let env = Environment {
            atomic_write_unit_min_bytes: Some(4096),
            atomic_write_unit_max_bytes: Some(16384),
            ..lab(Some(512))
        };
        assert!(file_promises(&env, 16384) && file_promises(&env, 8192));
        assert!(sentence(&env, 16384).ends_with("covering the 16 KiB page"), "{}", sentence(&env, 16384));
        assert!(!file_promises(&env, 65536));
        assert!(sentence(&env, 65536).contains("not covering the 64 KiB page"));
    }

    #[test]
    fn a_lab_disk_says_its_unit_against_the_page() {
        let torn = sentence(&lab(Some(4096)), 8192);
        assert!(torn.contains("(profile nvme-consumer) tears at 4 KiB boundaries, inside a 8 KiB page"), "{torn}");
        let whole = sentence(&lab(Some(16384)), 16384);
        assert!(whole.contains("writes 16 KiB units untorn, at least the 16 KiB page"), "{whole}");
        // Knowing the device's unit is not the file system's promise.
        assert!(!file_promises(&lab(Some(16384)), 16384));
        // A lab state without the unit says nothing about it.
        assert!(sentence(&lab(None), 8192).ends_with("no device below names an untorn unit larger than a sector"));
    }

    #[test]
    fn a_device_limit_the_file_system_does_not_offer_is_named() {
        let dev = Device {
            name: "nvme0n1".into(),
            atomic_write_unit_max_bytes: Some(65536),
            logical_block_size_bytes: Some(4096),
            ..Device::default()
        };
        let env = Environment { devices: vec![dev], ..Environment::default() };
        let s = sentence(&env, 16384);
        assert!(s.contains("the device nvme0n1 writes up to 64 KiB untorn"), "{s}");
        assert!(!file_promises(&env, 16384));
    }
}
