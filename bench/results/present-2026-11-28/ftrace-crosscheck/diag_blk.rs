// Throwaway diagnostic (not committed): one eBPF window around N O_DIRECT write+fdatasync commits.
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use syncbench::observe::blockdev::inkernel::{self, BlockPrograms};
use syncbench_sys::tracefs::Tracefs;

fn stat() -> Vec<u64> {
    std::fs::read_to_string("/sys/block/vda/stat").unwrap().split_whitespace().map(|w| w.parse().unwrap()).collect()
}
fn mono() -> u64 {
    let mut ts = libc_ts();
    unsafe { clock_gettime(1, &mut ts) };
    ts.0 as u64 * 1_000_000_000 + ts.1 as u64
}
#[repr(C)]
struct Ts(i64, i64);
fn libc_ts() -> Ts { Ts(0, 0) }
unsafe extern "C" { fn clock_gettime(c: i32, ts: *mut Ts) -> i32; }

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, n, out) = (&args[1], args[2].parse::<usize>().unwrap(), &args[3]);
    let t = Tracefs::open(&std::env::temp_dir()).unwrap();
    let issue = t.event("block", "block_rq_issue").unwrap();
    let complete = t.event("block", "block_rq_complete").unwrap();
    let il = inkernel::copy_len(&issue, &["dev", "sector", "nr_sector", "bytes", "rwbs"]).unwrap();
    let cl = inkernel::copy_len(&complete, &["dev", "sector", "nr_sector", "error", "rwbs"]).unwrap();
    let fields = |f: &syncbench_sys::tracefs::EventFormat| {
        (f.field("dev").unwrap(), f.field("sector").unwrap(), f.field("nr_sector").unwrap(), f.field("rwbs").unwrap())
    };
    let (fi, fc) = (fields(&issue), fields(&complete));
    let windows: usize = args.get(4).map_or(1, |w| w.parse().unwrap());
    let path = format!("{dir}/diag.dat");
    let f = std::fs::OpenOptions::new().create(true).write(true).read(true).custom_flags(0x4000).open(&path).unwrap();
    let layout = std::alloc::Layout::from_size_align(8192, 4096).unwrap();
    let buf = unsafe { std::slice::from_raw_parts_mut(std::alloc::alloc_zeroed(layout), 8192) };
    f.write_all_at(buf, 0).unwrap();
    f.sync_all().unwrap();
    let mut o = std::fs::File::create(out).unwrap();
    for w in 0..windows {
    let mut p = BlockPrograms::start(&[(&issue, il), (&complete, cl)], 32 << 20).unwrap();
    p.set_on(true).unwrap();
    let t0 = mono();
    let s0 = stat();
    for i in 0..n {
        buf[0] = i as u8;
        f.write_all_at(buf, 0).unwrap();
        f.sync_data().unwrap();
    }
    let s1 = stat();
    let t1 = mono();
    p.set_on(false).unwrap();
    let (mut ic, mut cc) = (0, 0);
    p.drain(true, |time, raw| {
        let id = u16::from_ne_bytes(raw[..2].try_into().unwrap()) as u64;
        let (kind, fs) = if id == issue.id { ic += 1; ("I", &fi) } else { cc += 1; ("C", &fc) };
        writeln!(o, "{time} {kind} {} {} {} {}", fs.0.uint(raw), fs.1.uint(raw), fs.2.uint(raw), fs.3.text(raw)).unwrap();
    });
    let lost = p.lost().unwrap();
    println!("w {w} t0 {t0} t1 {t1} commits {n} stat writes {} flushes {} issues {ic} completes {cc} lost {lost:?}",
        s1[4] - s0[4], s1[15] - s0[15]);
    drop(p);
    }
    std::fs::remove_file(&path).unwrap();
}
