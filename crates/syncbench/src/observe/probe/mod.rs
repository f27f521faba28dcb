//! What stands between a write and stable storage: environment readers and the verdict rules.
//!
//! The types below are part of the JSON envelope of every command and are shared with `advise`, `report`
//! and `compare`; add fields, never rename. The readers are small functions over a [`sysfs::Root`] so that
//! golden tests replace /proc and /sys with fixture trees; only [`dir_facts`] makes syscalls on DIR.

pub mod block;
pub mod device_rules;
pub mod disks;
mod export;
pub mod fs_type;
pub mod mountinfo;
pub mod payload;
pub mod render;
pub mod rules;
pub mod steal;
pub mod sysfs;
pub mod virt;

#[cfg(test)]
mod golden_tests;

use crate::core::environment::{Environment, LoopBacking};

/// What syncbench learns about DIR through syscalls (everything else comes from files under a root).
#[derive(Clone, Debug, Default)]
pub struct DirFacts {
    /// DIR, absolute and with symbolic links resolved.
    pub dir: std::path::PathBuf,
    /// `fstatfs` magic of DIR's file system.
    pub fs_magic: Option<u64>,
    /// `st_dev` of DIR as `(major, minor)`.
    pub dev: Option<(u32, u32)>,
    /// `statx` direct-I/O and untorn-write units of a file created in DIR.
    pub statx: Option<syncbench_sys::StatxIo>,
    /// What failed while gathering these facts.
    pub notes: Vec<String>,
}

/// Read everything syncbench can learn about the storage under `dir`. Never fails: what cannot be
/// read is reported as unknown.
pub fn collect(dir: &std::path::Path) -> Environment {
    collect_with_root(dir, &sysfs::Root::system())
}

/// [`collect`] with /proc and /sys read below `root` (syscalls on `dir` are still real).
pub fn collect_with_root(dir: &std::path::Path, root: &sysfs::Root) -> Environment {
    collect_from(&dir_facts(dir), root)
}

/// The syscall part of the probe: fstatfs, fstat and statx on DIR (statx on a `.syncbench-probe-*` file
/// created and removed at once). Failures become notes.
pub fn dir_facts(dir: &std::path::Path) -> DirFacts {
    let mut facts = DirFacts { dir: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()), ..DirFacts::default() };
    match syncbench_sys::open_dir(&facts.dir) {
        Ok(fd) => {
            facts.fs_magic = syncbench_sys::fs_magic(&fd).map_err(|e| facts.notes.push(format!("fstatfs: {e}"))).ok();
            facts.dev = syncbench_sys::device_of(&fd).map_err(|e| facts.notes.push(format!("fstat: {e}"))).ok();
        }
        Err(e) => facts.notes.push(format!("cannot open {}: {e}", facts.dir.display())),
    }
    facts.statx = statx_of_new_file(&facts.dir).map_err(|e| facts.notes.push(e)).ok();
    facts
}

fn statx_of_new_file(dir: &std::path::Path) -> Result<syncbench_sys::StatxIo, String> {
    let path = dir.join(crate::core::cleanup::unique_name("probe"));
    let (_created, fd) = crate::core::cleanup::Created::create(path, |p| {
        syncbench_sys::create_new(p, syncbench_sys::OpenFlags::BUFFERED)
            .map_err(|e| format!("statx skipped: cannot create a file in {}: {e}", dir.display()))
    })?;
    syncbench_sys::statx_io(&fd).map_err(|e| format!("statx: {e}"))
}

/// Assemble the environment from the syscall facts and the files under `root`.
pub fn collect_from(facts: &DirFacts, root: &sysfs::Root) -> Environment {
    let mut env = Environment {
        kernel: root.read("proc/sys/kernel/osrelease").map_or_else(|| "unknown".into(), |k| k.trim().to_string()),
        dir: facts.dir.display().to_string(),
        fs_magic: facts.fs_magic.unwrap_or(0),
        virtualization: virt::detect(root),
        notes: facts.notes.clone(),
        ..Environment::default()
    };
    describe_statx(&mut env, facts.statx);
    let mounts = read_mounts(root, &mut env.notes);
    let dev = facts.dev.map(|(major, minor)| format!("{major}:{minor}"));
    let mount = mountinfo::find(&mounts, &facts.dir, dev.as_deref());
    describe_mount(&mut env, mount, facts.fs_magic);
    describe_devices(&mut env, root, &mounts, dev.as_deref());
    describe_overlay(&mut env, &mounts);
    env
}

fn read_mounts(root: &sysfs::Root, notes: &mut Vec<String>) -> Vec<mountinfo::Mount> {
    match root.read("proc/self/mountinfo") {
        Some(text) => mountinfo::parse(&text),
        None => {
            notes.push("cannot read /proc/self/mountinfo: mount unknown".into());
            Vec::new()
        }
    }
}

fn describe_statx(env: &mut Environment, statx: Option<syncbench_sys::StatxIo>) {
    let dio = statx.and_then(|s| s.dio);
    let atomic = statx.and_then(|s| s.atomic);
    env.dio_offset_align_bytes = dio.map(|d| d.offset_align_bytes);
    env.dio_mem_align_bytes = dio.map(|d| d.mem_align_bytes);
    env.atomic_write_unit_min_bytes = atomic.map(|a| a.unit_min_bytes);
    env.atomic_write_unit_max_bytes = atomic.map(|a| a.unit_max_bytes);
}

fn describe_mount(env: &mut Environment, mount: Option<&mountinfo::Mount>, fs_magic: Option<u64>) {
    env.mount_fs_type = mount.map(|m| m.fs_type.clone());
    env.fs_type = fs_type::resolve(fs_magic, env.mount_fs_type.as_deref());
    env.mount_point = mount.map(|m| m.mount_point.clone());
    env.mount_source = mount.map(|m| m.source.clone());
    env.mount_options = mount.map(|m| m.options.clone()).unwrap_or_default();
    env.per_mount_options = mount.map(|m| m.per_mount_options.clone()).unwrap_or_default();
    env.super_options = mount.map(|m| m.super_options.clone()).unwrap_or_default();
}

/// The block-device chain, and for a loop device its backing file and the chain below that.
fn describe_devices(env: &mut Environment, root: &sysfs::Root, mounts: &[mountinfo::Mount], dev: Option<&str>) {
    let Some(start) = block::device_dir(root, dev, env.mount_source.as_deref()) else {
        if let Some(dev) = dev.filter(|d| !d.starts_with("0:")) {
            env.notes.push(format!("cannot read /sys/dev/block/{dev}: block device unknown"));
        }
        return;
    };
    let chain = block::walk(root, &start);
    env.devices = chain.devices;
    let Some(file) = chain.loop_backing_file else { return };
    let holder = mountinfo::find(mounts, std::path::Path::new(&file), None);
    let backing = block::loop_backing(file, chain.loop_direct_io, holder);
    // The loop device's flushes end up on the device under its backing file: show that chain too.
    let lower = block::backing_devices(root, &env.devices, &backing);
    env.devices.extend(lower);
    env.emulated_disk = block::lab_disk(root, &backing.file);
    env.loop_backing = Some(backing);
}

/// For overlayfs: where writes really go (`upperdir`) and on which file system.
fn describe_overlay(env: &mut Environment, mounts: &[mountinfo::Mount]) {
    if env.fs_type != "overlay" {
        return;
    }
    env.overlay_upper_dir = mountinfo::option_value(&env.mount_options, "upperdir").map(str::to_string);
    env.overlay_upper_fs_type = env
        .overlay_upper_dir
        .as_deref()
        .and_then(|d| mountinfo::find(mounts, std::path::Path::new(d), None))
        .map(|m| m.fs_type.clone());
}

/// The verdict rules over the environment and whatever measurements exist (see [`rules`]).
pub fn verdicts(env: &Environment, results: &[crate::core::schema::CaseResult]) -> Vec<crate::core::verdict::Verdict> {
    rules::all(env, results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::environment::{DeviceKind, Transport};

    #[test]
    fn a_real_dir_with_an_empty_root_is_partly_unknown_never_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let empty_root = tempfile::tempdir().unwrap();
        let env = collect_with_root(dir.path(), &sysfs::Root::at(empty_root.path()));
        // The syscalls still work: the file system is known from its magic.
        assert_ne!(env.fs_magic, 0);
        assert_eq!(env.fs_type, fs_type::name_of_magic(env.fs_magic).unwrap_or("unknown"));
        // Everything from /proc and /sys is unknown, and says so.
        assert_eq!(env.kernel, "unknown");
        assert!(env.mount_point.is_none() && env.devices.is_empty());
        assert!(env.notes.iter().any(|n| n.contains("mountinfo")), "{:?}", env.notes);
        assert!(!env.virtualization.virtual_machine);
        // The statx file is gone.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn environment_json_without_the_new_fields_still_loads() {
        let old = r#"{"kernel":"6.1","dir":"/d","fs_type":"ext4","fs_magic":61267,"mount_point":null,
            "mount_source":null,"mount_options":[],"devices":[{"name":"sda","dev":"8:0","kind":"disk","transport":"fibre"}],
            "loop_backing":null,"virtualization":{"virtual_machine":false}}"#;
        let env: Environment = serde_json::from_str(old).unwrap();
        assert_eq!(env.devices[0].holder, None);
        // A kind or transport a newer syncbench names is read, not refused.
        assert_eq!((env.devices[0].kind, env.devices[0].transport), (DeviceKind::Disk, Some(Transport::Other)));
        assert!(env.notes.is_empty());
    }
}
