//! Distributed deadlock detection by edge chasing through ZooKeeper, with no
//! coordinator ([`LockSpec::detect_deadlocks`](crate::LockSpec::detect_deadlocks)).
//!
//! # The wait-for graph
//!
//! Its vertices are participant nodes. Its edges are *firm* waits, each of which
//! stays true until someone gives up (a timeout, a cancel, a session expiry, a
//! deletion by hand, a victim leaving):
//!
//! * **blocker edge** `w -> b`, both in one lock directory: `w` is waiting and `b`
//!   is a lower node that must leave before `w` can hold. For a one-permit recipe
//!   (write, read, leader) every lower node its rule counts is such a blocker
//!   ([`Recipe::is_blocked_by`](crate::Recipe::is_blocked_by)): a read is blocked by
//!   every lower write. A semaphore of n > 1 permits needs only some of its
//!   blockers to leave, so none of them is firm, except the closest exclusive node
//!   below it, which must go whatever the permits (the rule that names it).
//! * **owner edge** `h -> w`: `h` is held and its owner waits at `w`. An owner holds
//!   its locks while it waits (that is what makes it an owner rather than a
//!   session), so `h` leaves only once `w` is granted or given up.
//!
//! # Publishing (owner edges)
//!
//! An acquisition with an owner that has waited longer than its `detect_after`
//! publishes where it waits: the full path of its waiting node goes into the owner
//! header (see `crate::owner`) of every node its owner holds on this session, with
//! a `setData` at the node's known version. That write never clobbers anyone
//! else's: a revocation marker (or any data written by someone else) changes the
//! version, the write fails with `BadVersion`, and the node is left alone from
//! then on. When the wait ends the path is withdrawn the same way. Until
//! `detect_after` has passed nothing at all is sent: a wait shorter than that
//! costs no request.
//!
//! # Chasing (one pass)
//!
//! At `detect_after`, then every `detect_after` while it still waits, and whenever
//! a watched blocker's data changes (someone published there), the waiter chases:
//! breadth first from its own waiting node, it lists every lock directory it
//! reaches and reads every node it reaches (pipelined, no watches, one round trip
//! per level). A waiting node leads to its firm blockers (from the listing, by the
//! recipe rules); a held node leads to the waits its header publishes. Reaching a
//! held node whose owner is our own closes a cycle: our owner holds it and waits
//! at our node. The chase visits at most [`MAX_NODES`] nodes.
//!
//! # Confirming (the second pass)
//!
//! A cycle found is read again, every directory listed and every node read in one
//! pipelined burst sent after every read of the first pass was answered. Each edge
//! must hold in both passes: both ends present, the same ends held and waiting, a
//! blocker still among the firm blockers, a held node's data unchanged (the same
//! `mzxid`) and still publishing the wait.
//!
//! **Why no false deadlock.** Node names carry a random attempt id and sequence
//! numbers are never reused in a directory's life, so a node is never re-created:
//! seen in two reads, it existed between them. A node's blockers only shrink (no
//! lower node can appear) and a holder stays a holder, so a node waiting at the
//! second read waited throughout, and one held at both reads was held throughout.
//! A held node whose data did not change between the reads published the same
//! waits throughout, and the waiting node it names was still waiting at the
//! second read. So every edge held over the whole interval between the last read
//! of the first pass and the first read of the second (ZooKeeper orders one
//! session's requests), and the whole cycle existed at once. A cycle of firm waits
//! cannot resolve itself: only a member giving up breaks it.
//!
//! **Why exactly one victim per cycle.** The candidates of a cycle are its waiting
//! nodes entered by an owner edge: each is the waiting node of a zklock member
//! that publishes, hence detects (and the chaser itself, entered by its own owner's
//! edge). The victim is the candidate with the highest `czxid`, the youngest
//! waiting node. The rule depends only on the cycle, not on who found it, so every
//! member that confirms a cycle names the same victim, and only the victim acts:
//! it fails with [`FailReason::Deadlock`](crate::FailReason::Deadlock) and deletes
//! its waiting node; the others keep their places. Every cycle has a candidate
//! (within one directory edges only go down the queue, so a cycle needs an owner
//! edge). And every deadlock is broken: the youngest candidate of a deadlocked set
//! finds, at its next chase, a cycle through its own owner, in which it is the
//! youngest candidate.
//!
//! Members that do not publish (Curator or kazoo clients, zklock acquisitions
//! without detection) can still sit on a cycle's blocker edges, but never on an
//! owner edge: a cycle through their owner is not seen. Semaphore waiters of more
//! than one permit take part only through an exclusive node below them.

//! # Latency and cost
//!
//! Without faults, a deadlock is broken at most `2 * detect_after` plus one chase
//! after its last edge appears: by then every member has published (each did at
//! `detect_after` into its wait), and the youngest candidate chases at least once
//! per `detect_after` (sooner when a publication lands on a blocker it watches).
//! A chase takes one round trip per level, two levels per owner on the cycle,
//! plus one round trip to confirm. A wait shorter than `detect_after` sends
//! nothing; a longer one sends one `setData` per node its owner holds on the
//! session (and one more to withdraw it), and per `detect_after` one chase of a
//! listing per directory reached and a read per node reached.
//!
//! # Holders that publish nothing (kazoo)
//!
//! A kazoo client's `Lock` writes its identifier as its node's data and publishes
//! no waits; neither can a zklock node named in the kazoo scheme (its data is the
//! owner, as kazoo's identifier). A chase that reaches such a held node, naming an
//! owner, *infers* its owner edges: that owner waits at every waiting node with the
//! same owner on the same session (a kazoo client is one session, its identifier
//! names the contender). Such waits are looked for where a cycle through us must
//! come back: in the directories where our owner holds nodes on this session, the
//! waiting nodes that those nodes block are read (one listing per directory and a
//! read per such waiter, only once a silent holder is reached). The second pass
//! checks an inferred edge like any other: both ends seen twice, the same owner
//! and session, the holder's data unchanged. A node entered by an inferred edge is
//! never a victim (a kazoo client cannot be told to give up); the zklock member of
//! the cycle is. Limits: a foreign owner's wait in a directory where our owner
//! holds nothing is not seen, and two zklock members on the kazoo scheme in one
//! cycle cannot see each other as candidates, so both may fail.
//!
//! # Prevention, reentrancy, downgrade
//!
//! What lock-client builds on owners (see its crate docs): multi-locks that take
//! several locks all-or-nothing in one canonical order (deadlock-free by
//! construction among themselves), reentrant mutexes (counted holds of one owner
//! on one node), and downgrade ([`LockSpec::read`](crate::LockSpec::read): the
//! write holder's read is not blocked by its own write node, a rule of the read
//! acquisition here; the self-deadlock check lets it through).

pub(crate) mod chase;
mod graph;
pub(crate) mod publish;
pub(crate) mod scan;

pub use crate::participants::CycleNode;
pub use graph::WaitFor;

/// The most nodes one chase visits (a bound on its requests).
pub const MAX_NODES: usize = 256;
