//! The human-readable probe: a short tree (file system → mount → device chain → machine) and the verdicts.
//! `run` prints the same two blocks above its tables.

use crate::core::environment::{Device, DeviceKind, Environment};
use crate::core::escape::escape_name;
use crate::core::schema::CaseResult;
use crate::core::verdict::{Severity, Verdict};
use std::fmt::Write;

/// Width verdict text is wrapped at.
const WRAP_COLUMNS: usize = 100;

/// What `run` prints above its tables: the environment tree, a blank line, the verdicts.
pub fn header(env: &Environment, verdicts: &[Verdict]) -> String {
    format!("{}\n{}", environment_tree(env), verdict_list(verdicts))
}

/// The environment as a tree, ending with a newline.
pub fn environment_tree(env: &Environment) -> String {
    let mut out = String::new();
    // Paths escaped: a newline in a directory or mount name must not break the tree.
    let _ = writeln!(out, "{}", escape_name(&env.dir));
    let _ = writeln!(out, "└─ {}", fs_line(env));
    let roots: Vec<&Device> = env.devices.iter().filter(|d| d.holder.is_none()).collect();
    if roots.is_empty() {
        let _ = writeln!(out, "   └─ {}", no_device_reason(env));
    }
    for (i, d) in roots.iter().enumerate() {
        device_subtree(&mut out, env, d, "   ", i + 1 == roots.len());
    }
    let _ = writeln!(out, "files in DIR: {}", statx_line(env));
    let _ = writeln!(out, "machine: {} · kernel {}", machine_line(env), env.kernel);
    for note in &env.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn fs_line(env: &Environment) -> String {
    let mut line = env.fs_type.clone();
    if env.fs_type == "unknown" || super::fs_type::name_of_magic(env.fs_magic).is_none() {
        let _ = write!(line, " (magic {:#x})", env.fs_magic);
    }
    match (&env.mount_point, &env.mount_source) {
        (Some(point), Some(source)) => {
            let _ = write!(line, " on {} from {}", escape_name(point), escape_name(source));
        }
        _ => line.push_str(" (mount unknown)"),
    }
    if let Some(options) = mount_options_text(env) {
        let _ = write!(line, " [{options}]");
    }
    if let (Some(dir), fs) = (&env.overlay_upper_dir, &env.overlay_upper_fs_type) {
        let _ = write!(line, "\n   ├─ writes go to {} on {}", escape_name(dir), fs.as_deref().unwrap_or("unknown"));
    }
    line
}

/// The mount options, the per-mount ones (`ro` of a read-only bind mount) apart from the super-block's
/// (the file system's own, which can say `rw` at the same time): `mount ro,relatime; super-block rw,discard`.
/// Files written before the two were recorded apart have only the merged list, shown as it is.
pub fn mount_options_text(env: &Environment) -> Option<String> {
    if env.per_mount_options.is_empty() && env.super_options.is_empty() {
        return (!env.mount_options.is_empty()).then(|| env.mount_options.join(","));
    }
    let mut parts = Vec::new();
    if !env.per_mount_options.is_empty() {
        parts.push(format!("mount {}", env.per_mount_options.join(",")));
    }
    if !env.super_options.is_empty() {
        parts.push(format!("super-block {}", env.super_options.join(",")));
    }
    Some(parts.join("; "))
}

fn no_device_reason(env: &Environment) -> &'static str {
    if super::fs_type::is_memory_fs(&env.fs_type) {
        "no block device: memory only"
    } else if super::fs_type::is_network_fs(&env.fs_type) || super::fs_type::is_fuse(&env.fs_type) {
        "no local block device: see the mount source"
    } else if env.fs_type == "overlay" {
        "no block device of its own: see the upper directory"
    } else {
        "block device: unknown"
    }
}

fn device_subtree(out: &mut String, env: &Environment, d: &Device, prefix: &str, last: bool) {
    let (branch, below) = if last { ("└─", "   ") } else { ("├─", "│  ") };
    let _ = writeln!(out, "{prefix}{branch} {}", device_line(d));
    let prefix = format!("{prefix}{below}");
    let lower: Vec<&Device> = env.devices.iter().filter(|l| l.holder.as_deref() == Some(d.name.as_str())).collect();
    if d.kind == DeviceKind::Loop
        && let Some(b) = &env.loop_backing
    {
        let branch = if lower.is_empty() { "└─" } else { "├─" };
        let _ = writeln!(out, "{prefix}{branch} {}", backing_line(b));
    }
    for (i, l) in lower.iter().enumerate() {
        device_subtree(out, env, l, &prefix, i + 1 == lower.len());
    }
}

fn backing_line(b: &super::LoopBacking) -> String {
    let dio = match b.direct_io {
        Some(true) => ", direct I/O",
        Some(false) => ", buffered (dio=0)",
        None => "",
    };
    let on = match (&b.mount_point, &b.mount_source) {
        (Some(p), Some(s)) => format!(" on {} from {}", escape_name(p), escape_name(s)),
        _ => String::new(),
    };
    format!("backing file {} on {}{on}{dio}", escape_name(&b.file), b.fs_type)
}

/// One device with its cache settings: `vda (254:0) disk · virtio · rotational · write cache: write back …`.
pub fn device_line(d: &Device) -> String {
    let mut parts = vec![format!("{} ({}) {}", d.name, d.dev, d.kind)];
    if let Some(name) = &d.dm_name {
        parts.push(format!("dm name {name}"));
    }
    if let Some(t) = &d.transport {
        parts.push(t.name().to_string());
    }
    // virtio reports a bare PCI vendor id (`0x1af4`) and libata the placeholder `ATA`: neither names a maker.
    let vendor = d.vendor.as_deref().filter(|v| !v.starts_with("0x") && *v != "ATA");
    let hardware: Vec<&str> = [vendor, d.model.as_deref()].into_iter().flatten().collect();
    if !hardware.is_empty() {
        parts.push(hardware.join(" "));
    }
    if d.kind == DeviceKind::Partition {
        return parts.join(" · ");
    }
    parts.push(match d.rotational {
        Some(true) => "rotational".into(),
        Some(false) => "non-rotational".into(),
        None => "rotational: unknown".into(),
    });
    parts.push(format!("write cache: {}", d.write_cache.as_deref().unwrap_or("unknown")));
    parts.push(format!("FUA: {}", yes_no(d.fua)));
    parts.push(format!("sectors {}/{} B", num(d.logical_block_size_bytes), num(d.physical_block_size_bytes)));
    match (d.atomic_write_unit_min_bytes, d.atomic_write_unit_max_bytes) {
        (Some(min), Some(max)) if max > 0 => parts.push(format!("untorn writes {min}–{max} B")),
        (_, Some(_)) => parts.push("untorn writes: no".into()),
        _ => {}
    }
    parts.join(" · ")
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

fn num(n: Option<u32>) -> String {
    n.map_or_else(|| "?".into(), |n| n.to_string())
}

fn statx_line(env: &Environment) -> String {
    let dio = match (env.dio_offset_align_bytes, env.dio_mem_align_bytes) {
        (Some(off), Some(mem)) => format!("O_DIRECT alignment {off} B (memory {mem} B)"),
        _ => "O_DIRECT: not reported".into(),
    };
    let atomic = match (env.atomic_write_unit_min_bytes, env.atomic_write_unit_max_bytes) {
        (Some(min), Some(max)) => format!("untorn writes {min}–{max} B"),
        _ => "untorn writes: not supported".into(),
    };
    format!("{dio} · {atomic}")
}

fn machine_line(env: &Environment) -> String {
    let v = &env.virtualization;
    let mut line = match (&v.hypervisor, v.virtual_machine) {
        (Some(h), _) => format!("virtual machine ({h})"),
        (None, true) => "virtual machine (hypervisor not named)".into(),
        (None, false) => "no hypervisor detected".into(),
    };
    let dmi: Vec<&str> = [v.dmi_vendor.as_deref(), v.dmi_product.as_deref()].into_iter().flatten().collect();
    if !dmi.is_empty() {
        let _ = write!(line, ", DMI {}", dmi.join(" / "));
    }
    if let Some(c) = &v.container {
        let _ = write!(line, " · container: {c}");
    }
    line
}

/// One line for a measured flush burst.
pub fn flush_line(r: &CaseResult) -> String {
    format!(
        "flush burst: {:.0} {}/s · {} B {} · p50 {} · p99 {} · {} commits in {:.2} s",
        r.ops_per_s,
        r.method,
        r.write_size_bytes,
        r.file_state,
        crate::core::units::format_us_or_ms(r.latency_ns.p50),
        crate::core::units::format_us_or_ms(r.latency_ns.p99),
        r.ops,
        r.duration_s
    )
}

/// The verdicts, most severe first, each with its advice; ends with a newline.
pub fn verdict_list(verdicts: &[Verdict]) -> String {
    if verdicts.is_empty() {
        return "verdicts: nothing to report\n".into();
    }
    let mut out = String::from("verdicts:\n");
    for v in verdicts {
        let label = match v.severity {
            Severity::Critical => "CRITICAL",
            Severity::Warning => "WARNING",
            Severity::Info => "info",
        };
        out.push_str(&wrap(&format!("{label} [{}] {}", v.code, v.message), "  ", "    "));
        out.push_str(&wrap(&format!("→ {}", v.advice), "    ", "      "));
    }
    out
}

/// Greedy word wrap at [`WRAP_COLUMNS`].
fn wrap(text: &str, first_indent: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = first_indent.to_string();
    let mut line_has_word = false;
    for word in text.split_whitespace() {
        if line_has_word && line.chars().count() + 1 + word.chars().count() > WRAP_COLUMNS {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_string();
            line_has_word = false;
        }
        if line_has_word {
            line.push(' ');
        }
        line.push_str(word);
        line_has_word = true;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_words_and_indents() {
        let text = "word ".repeat(60);
        let wrapped = wrap(&text, "  ", "    ");
        assert!(wrapped.lines().all(|l| l.chars().count() <= WRAP_COLUMNS));
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("    word")));
        assert_eq!(wrapped.split_whitespace().count(), 60);
    }

    #[test]
    fn unknown_everything_still_renders() {
        let env = Environment { dir: "/x".into(), fs_type: "unknown".into(), ..Environment::default() };
        let tree = environment_tree(&env);
        assert!(tree.contains("unknown (magic 0x0) (mount unknown)"), "{tree}");
        assert!(tree.contains("block device: unknown"), "{tree}");
    }

    #[test]
    fn paths_with_newlines_stay_on_their_line_and_options_show_whose_they_are() {
        let env = Environment {
            dir: "/srv/a\nb".into(),
            fs_type: "ext4".into(),
            fs_magic: 0xEF53,
            mount_point: Some("/srv/a\nb".into()),
            mount_source: Some("/dev/vda".into()),
            mount_options: vec!["ro".into(), "relatime".into(), "rw".into(), "discard".into()],
            per_mount_options: vec!["ro".into(), "relatime".into()],
            super_options: vec!["rw".into(), "discard".into()],
            ..Environment::default()
        };
        let tree = environment_tree(&env);
        let lines: Vec<&str> = tree.lines().collect();
        assert_eq!(lines[0], "/srv/a\\nb", "{tree}");
        assert_eq!(lines[1], "└─ ext4 on /srv/a\\nb from /dev/vda [mount ro,relatime; super-block rw,discard]");
        // A file written before the two lists were recorded apart shows the merged list as it was.
        let old = Environment { per_mount_options: vec![], super_options: vec![], ..env };
        assert_eq!(mount_options_text(&old).unwrap(), "ro,relatime,rw,discard");
    }
}
