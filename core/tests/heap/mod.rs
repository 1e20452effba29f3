//! What the memory tests of lock-core and lock-client share (written once
//! here; lock-client's includes this file): a global allocator that counts the
//! live heap, which a test crate installs with
//! `#[global_allocator] static ALLOCATOR: Counting = Counting;`, and the
//! server's side of their scenario, scripted.

use lock_core::{Op, Reply, Stat};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

/// The system allocator, counting live bytes and allocations.
pub struct Counting;

static BYTES: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as isize, Relaxed);
        BLOCKS.fetch_add(1, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        BYTES.fetch_sub(layout.size() as isize, Relaxed);
        BLOCKS.fetch_sub(1, Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BYTES.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The live heap now: (bytes, allocations).
pub fn live() -> (isize, isize) {
    (BYTES.load(Relaxed), BLOCKS.load(Relaxed))
}

/// The live heap per item between two counts `before` and `after` of `n`
/// items: (bytes, allocations).
pub fn per_item(before: (isize, isize), after: (isize, isize), n: usize) -> (f64, f64) {
    let n = n as f64;
    (
        (after.0 - before.0) as f64 / n,
        (after.1 - before.1) as f64 / n,
    )
}

/// The server's side, scripted (a model server in the process would count its
/// own nodes as ours): every lock directory holds our node, sequence 2, behind
/// `blocker` (another client's node, sequence 1) if there is one.
pub struct Scripted {
    /// Our session.
    pub sid: i64,
    /// The name of the node every acquisition waits behind, if any.
    pub blocker: Option<String>,
    /// The reads answered.
    pub reads: usize,
    czxid: i64,
    /// The name of our node created last: the one the next listing shows.
    created: String,
}

impl Scripted {
    pub fn new(sid: i64) -> Scripted {
        let (blocker, reads, czxid, created) = (None, 0, 100, String::new());
        Scripted {
            sid,
            blocker,
            reads,
            czxid,
            created,
        }
    }

    /// The answer to `op`.
    pub fn reply(&mut self, op: &Op) -> Reply {
        let stat = |czxid, ephemeral_owner| Stat {
            czxid,
            ephemeral_owner,
            ..Stat::default()
        };
        match op {
            Op::Create { path, .. } => {
                self.czxid += 1;
                let path = format!("{path}0000000002");
                self.created = path.rsplit('/').next().unwrap().to_owned();
                let stat = Some(stat(self.czxid, self.sid));
                Reply::Created { path, stat }
            }
            Op::GetChildren { .. } => {
                let names = self.blocker.iter().chain([&self.created]);
                Reply::Children(names.cloned().collect())
            }
            Op::GetData { path, .. } => {
                self.reads += 1;
                let owner = if path.ends_with("0000000001") {
                    42
                } else {
                    self.sid
                };
                let stat = stat(self.czxid, owner);
                Reply::Data {
                    data: Vec::new(),
                    stat,
                }
            }
            Op::Sync { .. } => Reply::Synced,
            other => panic!("unexpected {other:?}"),
        }
    }
}
