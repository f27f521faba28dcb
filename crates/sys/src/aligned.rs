//! A heap buffer aligned for `O_DIRECT` (which needs the memory, offset and length aligned).

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

/// A zero-initialised byte buffer whose start is aligned to `align` bytes.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only allow reads of the owned bytes.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to `align` (a power of two). Panics on a bad alignment;
    /// aborts like `Vec` on allocation failure.
    pub fn new(len: usize, align: usize) -> AlignedBuf {
        assert!(align.is_power_of_two(), "alignment {align} is not a power of two");
        let layout = Layout::from_size_align(len.max(1), align).expect("buffer size overflows");
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, layout }
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Always false: the buffer has at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points at layout.size() initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated with exactly this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes, align {})", self.layout.size(), self.layout.align())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for align in [512usize, 4096, 65536] {
            let mut b = AlignedBuf::new(8192, align);
            assert_eq!(b.as_slice().as_ptr() as usize % align, 0);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice()[8191] = 7;
            assert_eq!(b.as_slice()[8191], 7);
            assert_eq!(b.len(), 8192);
        }
    }
}
