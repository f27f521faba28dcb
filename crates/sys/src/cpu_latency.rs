//! A PM QoS request on the CPUs' wake-up latency (`/dev/cpu_dma_latency`, the kernel's
//! Documentation/power/pm_qos_interface.rst): while a request of 0 µs is held, no CPU enters an idle state
//! slower to leave than that, so an idle CPU polls instead of halting. On a virtual machine a halted vCPU
//! is woken through the hypervisor, tens of microseconds per wake-up; a request chain that hops between
//! threads (the lab's loop driver, FUSE server and completer) pays that at every hop.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};

/// Where the kernel takes CPU wake-up latency requests.
const DEVICE: &str = "/dev/cpu_dma_latency";

/// A held request: the kernel keeps it for as long as this descriptor is open, and drops it when the
/// descriptor closes (also when the process dies).
#[derive(Debug)]
pub struct CpuLatencyRequest {
    _device: File,
}

/// Ask that no CPU take longer than `max_us` microseconds to wake up, until the returned request is
/// dropped. Needs root (the device is mode 0600).
pub fn request_cpu_latency(max_us: i32) -> io::Result<CpuLatencyRequest> {
    let mut device = OpenOptions::new().write(true).open(DEVICE)?;
    // The kernel takes the value as a binary s32 (or a hex string); a short write would leave no request.
    device.write_all(&max_us.to_ne_bytes())?;
    Ok(CpuLatencyRequest { _device: device })
}

/// The latency the kernel enforces now: the smallest of all requests held, or its default when none is.
pub fn cpu_latency_in_force_us() -> io::Result<i32> {
    let mut bytes = [0u8; 4];
    File::open(DEVICE)?.read_exact(&mut bytes)?;
    Ok(i32::from_ne_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_request_is_in_force() {
        if !crate::test_support::is_root_or_skip() {
            return;
        }
        let request = request_cpu_latency(0).expect("request");
        assert_eq!(cpu_latency_in_force_us().unwrap(), 0);
        drop(request);
    }
}
