//! The FUSE server of the emulated disk: one file, `image`, whose reads, writes and fsyncs (the loop
//! device's flushes) go through the [`DeviceModel`] on the real clock.
//!
//! Requests are answered asynchronously: a write or flush enters the model at once, and its reply is
//! queued for the moment the model says it completes; a completer thread sends it then (fuser replies may be
//! sent from any thread). So a flush in progress does not hold up unrelated writes, as on a device with a
//! queue. Every open is `direct_io`, so the kernel keeps no page cache of the image on the FUSE side.
//!
//! The file handle of an open is the device's power generation: after a cut, requests through a handle
//! opened before it fail with EIO (the old loop device talks to a disk that lost power).

use super::model::{DeviceLost, DeviceModel, FlushTicket, Medium, WriteTicket};
use crate::proof::lab::fault::FaultSwitch;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// The name of the one file the FUSE mount serves.
pub const IMAGE_NAME: &str = "image";

const IMAGE_INO: INodeNo = INodeNo(2);
/// Attributes never change (the image has a fixed size), so the kernel may cache them.
const ATTR_TTL: Duration = Duration::from_secs(60);
/// How often the completer runs the model's background destaging when nothing else wakes it.
const IDLE_TICK: Duration = Duration::from_millis(10);
/// The completer sleeps until this long before a reply is due and spins the rest: a timed sleep's
/// wake-up comes tens of µs late on this VM, which would add to every modelled latency.
const SPIN_NS: u64 = 50_000;
/// The real-time priority of the server's completer (and, if asked, its FUSE threads): FIFO, low, above
/// every normal thread and below the kernel's own real-time threads. The lab stands for a disk, whose timing
/// does not depend on the host's CPU load; at normal priority a loaded machine delayed the completer's
/// wake-ups by up to milliseconds.
const SERVER_RT_PRIORITY: i32 = 10;

/// The image file on the host: the durable medium.
pub struct FileMedium(pub OwnedFd);

impl Medium for FileMedium {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        syncbench_sys::pread_exact(&self.0, buf, offset)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        syncbench_sys::pwrite_all(&self.0, data, offset)
    }
}

/// A reply waiting for its completion time.
enum Pending {
    Write(WriteTicket, ReplyWrite, u32),
    Flush(FlushTicket, ReplyEmpty),
}

struct Queued {
    due_ns: u64,
    order: u64,
    pending: Pending,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.due_ns, self.order) == (other.due_ns, other.order)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due_ns, self.order).cmp(&(other.due_ns, other.order))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<Queued>>,
    next_order: u64,
}

/// The device as the FUSE server and the stack share it.
pub struct Device {
    model: Mutex<DeviceModel>,
    medium: FileMedium,
    size_bytes: u64,
    faults: Option<FaultSwitch>,
    origin: Instant,
    queue: Mutex<Queue>,
    wake: Condvar,
    stopping: AtomicBool,
}

impl Device {
    /// A device over `medium` (`size_bytes` long), with an optional fault switch failing chosen writes.
    pub fn new(model: DeviceModel, medium: FileMedium, size_bytes: u64, faults: Option<FaultSwitch>) -> Arc<Device> {
        Arc::new(Device {
            model: Mutex::new(model),
            medium,
            size_bytes,
            faults,
            origin: Instant::now(),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            stopping: AtomicBool::new(false),
        })
    }

    /// The model, locked.
    pub fn model(&self) -> MutexGuard<'_, DeviceModel> {
        self.model.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The durable medium.
    pub fn medium(&self) -> &FileMedium {
        &self.medium
    }

    fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn enqueue(&self, due_ns: u64, pending: Pending) {
        let mut q = self.queue();
        let order = q.next_order;
        q.next_order += 1;
        q.heap.push(Reverse(Queued { due_ns, order, pending }));
        drop(q);
        self.wake.notify_one();
    }

    /// Send due replies until [`Device::stop`]; then fail whatever is still queued.
    pub fn run_completer(self: Arc<Self>) {
        // The default 50 µs slack would add to every modelled latency.
        if let Err(e) = syncbench_sys::set_thread_timer_slack_ns(1) {
            eprintln!("syncbench lab: cannot lower the completer's timer slack ({e}); latencies run late");
        }
        promote_this_thread(true);
        let mut q = self.queue();
        while !self.stopping.load(Ordering::SeqCst) {
            let now = self.now_ns();
            let next_due = q.heap.peek().map(|Reverse(item)| item.due_ns);
            match next_due {
                Some(due) if due <= now => {
                    let Reverse(item) = q.heap.pop().expect("peeked");
                    drop(q);
                    self.complete(item.pending);
                    q = self.queue();
                }
                // Close to due: spin, releasing the queue so receivers can add an earlier reply meanwhile.
                Some(due) if due - now <= SPIN_NS => {
                    drop(q);
                    std::hint::spin_loop();
                    q = self.queue();
                }
                _ => {
                    drop(q);
                    self.background(now);
                    q = self.queue();
                    // Timed from after the destaging, and from the queue as it is now.
                    let now = self.now_ns();
                    let wake_at = q.heap.peek().map(|Reverse(item)| item.due_ns.saturating_sub(SPIN_NS));
                    let wait =
                        wake_at.map_or(IDLE_TICK, |at| Duration::from_nanos(at.saturating_sub(now)).min(IDLE_TICK));
                    if !wait.is_zero() {
                        q = self.wake.wait_timeout(q, wait).unwrap_or_else(|p| p.into_inner()).0;
                    }
                }
            }
        }
        for Reverse(item) in std::mem::take(&mut q.heap) {
            match item.pending {
                Pending::Write(_, reply, _) => reply.error(Errno::EIO),
                Pending::Flush(_, reply) => reply.error(Errno::EIO),
            }
        }
    }

    /// Stop the completer thread (pending requests fail with EIO).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    fn background(&self, now: u64) {
        if let Err(e) = self.model().tick(now, &self.medium) {
            eprintln!("syncbench lab: background destage failed: {e}");
        }
    }

    fn complete(&self, pending: Pending) {
        match pending {
            Pending::Write(ticket, reply, len) => {
                let done = self.finish(ticket.done_at_ns, |model| model.complete_write(ticket, &self.medium));
                match done {
                    Ok(()) => reply.written(len),
                    Err(DeviceLost) => reply.error(Errno::EIO),
                }
            }
            Pending::Flush(ticket, reply) => {
                let done_at_ns = ticket.done_at_ns;
                match self.finish(done_at_ns, |model| model.complete_flush(ticket, &self.medium)) {
                    Ok(()) => reply.ok(),
                    Err(DeviceLost) => reply.error(Errno::EIO),
                }
            }
        }
    }

    /// Complete a request in the model, recording how late its reply goes out against its charged time.
    fn finish<T>(&self, done_at_ns: u64, complete: impl FnOnce(&mut DeviceModel) -> T) -> T {
        let mut model = self.model();
        model.record_reply_late(self.now_ns().saturating_sub(done_at_ns));
        complete(&mut model)
    }

    /// Whether a request through handle `fh` reaches a powered device.
    fn current(&self, fh: FileHandle) -> bool {
        self.model().epoch() == fh.0
    }
}

thread_local! {
    static PROMOTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Move the calling server thread into the real-time class if [`realtime_wanted`], once per thread
/// (`fuser` starts the FUSE threads, so each promotes itself on its first request). Without the privilege
/// the lab still works, its latencies running late on a loaded machine; that is said once.
fn promote_this_thread(completer: bool) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if PROMOTED.with(|p| p.replace(true)) || !realtime_wanted(completer) {
        return;
    }
    let promoted = syncbench_sys::set_thread_realtime(Some(SERVER_RT_PRIORITY));
    if let Err(e) = promoted
        && !WARNED.swap(true, Ordering::Relaxed)
    {
        eprintln!(
            "syncbench lab: cannot run the server's threads at real-time priority ({e}); under load its latencies run late"
        );
    }
}

/// Whether this thread runs at real-time priority: `SYNCBENCH_LAB_SERVER_RT=all|completer|off`, default
/// `completer` (an unreadable value counts as the default, with a warning). The completer sends every reply
/// that has a modelled time; the FUSE threads stay normal by default because, at the loads bench/
/// lab_calibration.sh could alternate (4-13), real-time FUSE threads made `zero`'s 8 KiB commit slower
/// (median 86 against 51 µs): the scheduler places a waking real-time thread differently.
fn realtime_wanted(completer: bool) -> bool {
    static MODE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let mode = MODE.get_or_init(|| {
        let mode = std::env::var("SYNCBENCH_LAB_SERVER_RT").unwrap_or_else(|_| "completer".into());
        if !["all", "completer", "off"].contains(&mode.as_str()) {
            eprintln!("syncbench lab: ignoring SYNCBENCH_LAB_SERVER_RT={mode:?} (all, completer or off)");
        }
        mode
    });
    match mode.as_str() {
        "off" => false,
        "all" => true,
        _ => completer,
    }
}

/// The FUSE file system: a root directory holding `image`.
pub struct ImageFs(pub Arc<Device>);

impl ImageFs {
    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, size) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o700, 0),
            IMAGE_INO => (FileType::RegularFile, 0o600, self.0.size_bytes),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }
}

fn errno_of(err: &std::io::Error) -> Errno {
    err.raw_os_error().map(Errno::from_i32).unwrap_or(Errno::EIO)
}

impl Filesystem for ImageFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Lets the loop device keep several direct-I/O requests in flight; optional, the device works without.
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (parent, name.to_str()) {
            (INodeNo::ROOT, Some(IMAGE_NAME)) => {
                let attr = self.attr(IMAGE_INO).expect("the image inode always exists");
                reply.entry(&ATTR_TTL, &attr, Generation(0));
            }
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(attr) => reply.attr(&ATTR_TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == IMAGE_INO {
            reply.opened(FileHandle(self.0.model().epoch()), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        promote_this_thread(false);
        if !self.0.current(fh) {
            return reply.error(Errno::EIO);
        }
        let len = (size as u64).min(self.0.size_bytes.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; len];
        match self.0.model().read(offset, &mut buf, &self.0.medium) {
            Ok(()) => reply.data(&buf),
            Err(e) => reply.error(errno_of(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        promote_this_thread(false);
        if offset + data.len() as u64 > self.0.size_bytes {
            return reply.error(Errno::ENOSPC);
        }
        if self.0.faults.as_ref().is_some_and(|f| f.should_fail(offset, data)) {
            return reply.error(Errno::EIO);
        }
        let now = self.0.now_ns();
        let submitted = {
            let mut model = self.0.model();
            // Checked under the lock: a cut between the check and the write would put it in the new generation.
            if model.epoch() != fh.0 {
                return reply.error(Errno::EIO);
            }
            model.submit_write(now, offset, data, &self.0.medium)
        };
        match submitted {
            Err(e) => reply.error(errno_of(&e)),
            Ok(ticket) if ticket.done_at_ns <= now => self.0.complete(Pending::Write(ticket, reply, data.len() as u32)),
            Ok(ticket) => self.0.enqueue(ticket.done_at_ns, Pending::Write(ticket, reply, data.len() as u32)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _owner: LockOwner, reply: ReplyEmpty) {
        // close(2) of the image, not a device flush.
        reply.ok();
    }

    /// The loop device's flush.
    fn fsync(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        promote_this_thread(false);
        let now = self.0.now_ns();
        let ticket = {
            let mut model = self.0.model();
            if model.epoch() != fh.0 {
                return reply.error(Errno::EIO);
            }
            model.begin_flush(now)
        };
        if ticket.done_at_ns <= now {
            self.0.complete(Pending::Flush(ticket, reply));
        } else {
            self.0.enqueue(ticket.done_at_ns, Pending::Flush(ticket, reply));
        }
    }
}
