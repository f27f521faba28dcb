//! Virtualization: is there a hypervisor (whose cache decides what a flush means) or a container?

use super::sysfs::{Root, read_trimmed};
use crate::core::environment::Virtualization;

/// Detect a hypervisor from the cpuinfo `hypervisor` flag, DMI, `/sys/hypervisor` and the clock sources,
/// and a container from the marker files runtimes leave.
pub fn detect(root: &Root) -> Virtualization {
    let dmi = root.path("sys/class/dmi/id");
    let dmi_vendor = read_trimmed(&dmi, "sys_vendor");
    let dmi_product = read_trimmed(&dmi, "product_name");
    let cpu_flag = root.read("proc/cpuinfo").is_some_and(|c| cpuinfo_has_hypervisor_flag(&c));
    let hypervisor = name_from_dmi(dmi_vendor.as_deref(), dmi_product.as_deref())
        .or_else(|| read_trimmed(&root.path("sys/hypervisor"), "type").map(|t| name_from_sys_hypervisor(&t)))
        .or_else(|| {
            name_from_clocksources(&root.read("sys/devices/system/clocksource/clocksource0/available_clocksource")?)
        })
        .map(str::to_string);
    Virtualization {
        virtual_machine: cpu_flag || hypervisor.is_some(),
        hypervisor,
        dmi_vendor,
        dmi_product,
        container: container(root),
    }
}

fn cpuinfo_has_hypervisor_flag(cpuinfo: &str) -> bool {
    cpuinfo.lines().filter(|l| l.starts_with("flags")).any(|l| l.split_whitespace().any(|flag| flag == "hypervisor"))
}

/// Hypervisors as their firmware names itself in DMI.
fn name_from_dmi(vendor: Option<&str>, product: Option<&str>) -> Option<&'static str> {
    let vendor = vendor.unwrap_or("");
    let product = product.unwrap_or("");
    let both = format!("{vendor} {product}");
    let name = if both.contains("VMware") {
        "VMware"
    } else if both.contains("VirtualBox") || vendor.contains("innotek") {
        "VirtualBox"
    } else if vendor.contains("Microsoft") && product.contains("Virtual") {
        "Hyper-V"
    } else if both.contains("Amazon EC2") {
        "Amazon EC2"
    } else if both.contains("Google Compute Engine") {
        "Google Compute Engine"
    } else if both.contains("OpenStack") {
        "OpenStack (KVM)"
    } else if vendor.contains("QEMU") || both.contains("KVM") {
        "KVM/QEMU"
    } else if both.contains("Xen") {
        "Xen"
    } else if both.contains("Parallels") {
        "Parallels"
    } else if both.contains("BHYVE") {
        "bhyve"
    } else {
        return None;
    };
    Some(name)
}

fn name_from_sys_hypervisor(kind: &str) -> &'static str {
    if kind.eq_ignore_ascii_case("xen") { "Xen" } else { "unknown hypervisor" }
}

/// Paravirtual clocks name the hypervisor when there is no DMI (e.g. Firecracker microVMs).
fn name_from_clocksources(available: &str) -> Option<&'static str> {
    let has = |c: &str| available.split_whitespace().any(|s| s == c);
    if has("kvm-clock") {
        Some("KVM")
    } else if has("xen") {
        Some("Xen")
    } else if has("hyperv_clocksource_tsc_page") || has("hyperv_clocksource_msr") {
        Some("Hyper-V")
    } else {
        None
    }
}

fn container(root: &Root) -> Option<String> {
    if root.path(".dockerenv").exists() {
        return Some("docker".into());
    }
    if root.path("run/.containerenv").exists() {
        return Some("podman".into());
    }
    let environ = std::fs::read(root.path("proc/1/environ")).ok()?;
    environ
        .split(|b| *b == 0)
        .find_map(|var| var.strip_prefix(b"container="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_flag() {
        assert!(cpuinfo_has_hypervisor_flag("processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n"));
        assert!(!cpuinfo_has_hypervisor_flag("flags\t\t: fpu vme lahf_lm\nmodel name: hypervisorish\n"));
    }

    #[test]
    fn dmi_names() {
        assert_eq!(name_from_dmi(Some("QEMU"), Some("Standard PC (Q35 + ICH9, 2009)")), Some("KVM/QEMU"));
        assert_eq!(name_from_dmi(Some("VMware, Inc."), Some("VMware7,1")), Some("VMware"));
        assert_eq!(name_from_dmi(Some("Microsoft Corporation"), Some("Virtual Machine")), Some("Hyper-V"));
        assert_eq!(name_from_dmi(Some("Amazon EC2"), Some("m6i.large")), Some("Amazon EC2"));
        assert_eq!(name_from_dmi(Some("Dell Inc."), Some("PowerEdge R740")), None);
        assert_eq!(name_from_dmi(None, None), None);
    }

    #[test]
    fn clocksources() {
        assert_eq!(name_from_clocksources("tsc kvm-clock \n"), Some("KVM"));
        assert_eq!(name_from_clocksources("tsc hpet acpi_pm\n"), None);
    }

    #[test]
    fn empty_root_is_bare_metal_without_container() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect(&Root::at(dir.path())), Virtualization::default());
    }
}
