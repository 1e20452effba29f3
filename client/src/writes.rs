//! [`Writes`]: the ZooKeeper writes of a fenced write, built in order.

use lock_core::{CreateMode, MultiOp};

/// ZooKeeper writes to apply atomically with [`LockGuard::fenced_write`](crate::LockGuard::fenced_write)
/// (or [`Leadership::fenced_write`](crate::Leadership::fenced_write)): they apply all
/// together, in order, and only while the lock is held. Versions are ZooKeeper data
/// versions; the plain builders accept any version.
///
/// A `Vec<MultiOp>` converts into `Writes` too.
///
/// ```
/// use zklock::Writes;
/// let writes = Writes::new()
///     .set_data("/app/config", b"v2")
///     .create("/app/history/v2", b"by leader 7")
///     .delete("/app/draft")
///     .check_version("/app/schema", 3);
/// assert_eq!(writes.len(), 4);
/// ```
#[derive(Clone, PartialEq, Eq, Debug, Default)]
#[must_use = "writes do nothing until passed to fenced_write"]
pub struct Writes {
    ops: Vec<MultiOp>,
}

impl Writes {
    /// No writes yet.
    ///
    /// ```
    /// assert!(zklock::Writes::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `path`'s data, whatever its version.
    ///
    /// ```
    /// let w = zklock::Writes::new().set_data("/app/config", b"v2");
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn set_data(self, path: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        self.push(MultiOp::SetData {
            path: path.into(),
            data: data.into(),
            version: None,
        })
    }

    /// Sets `path`'s data if its data version is `version` (else the whole write fails
    /// with [`FencedError::Write`](lock_core::FencedError::Write) and `BadVersion`).
    ///
    /// ```
    /// let w = zklock::Writes::new().set_data_version("/app/config", b"v2", 1);
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn set_data_version(
        self,
        path: impl Into<String>,
        data: impl Into<Vec<u8>>,
        version: i32,
    ) -> Self {
        self.push(MultiOp::SetData {
            path: path.into(),
            data: data.into(),
            version: Some(version),
        })
    }

    /// Creates a persistent node (its parent must exist).
    ///
    /// ```
    /// let w = zklock::Writes::new().create("/app/history/v2", b"");
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn create(self, path: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        self.create_with_mode(path, data, CreateMode::Persistent)
    }

    /// Creates a node with the given mode (for a sequential mode, `path` is the prefix).
    ///
    /// ```
    /// use zklock::{CreateMode, Writes};
    /// let w = Writes::new().create_with_mode("/app/owner", b"me", CreateMode::Ephemeral);
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn create_with_mode(
        self,
        path: impl Into<String>,
        data: impl Into<Vec<u8>>,
        mode: CreateMode,
    ) -> Self {
        self.push(MultiOp::Create {
            path: path.into(),
            data: data.into(),
            mode,
        })
    }

    /// Deletes a node (without children), whatever its version.
    ///
    /// ```
    /// let w = zklock::Writes::new().delete("/app/draft");
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn delete(self, path: impl Into<String>) -> Self {
        self.push(MultiOp::Delete {
            path: path.into(),
            version: None,
        })
    }

    /// Deletes a node if its data version is `version`.
    ///
    /// ```
    /// let w = zklock::Writes::new().delete_version("/app/draft", 4);
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn delete_version(self, path: impl Into<String>, version: i32) -> Self {
        self.push(MultiOp::Delete {
            path: path.into(),
            version: Some(version),
        })
    }

    /// Requires `path` to exist with data version `version` (writes nothing).
    ///
    /// ```
    /// let w = zklock::Writes::new().check_version("/app/schema", 3);
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn check_version(self, path: impl Into<String>, version: i32) -> Self {
        self.push(MultiOp::Check {
            path: path.into(),
            version: Some(version),
        })
    }

    /// Appends any [`MultiOp`].
    ///
    /// ```
    /// use zklock::{MultiOp, Writes};
    /// let w = Writes::new().push(MultiOp::Delete { path: "/app/draft".into(), version: None });
    /// # assert_eq!(w.len(), 1);
    /// ```
    pub fn push(mut self, op: MultiOp) -> Self {
        self.ops.push(op);
        self
    }

    /// The number of writes.
    ///
    /// ```
    /// assert_eq!(zklock::Writes::new().delete("/a").len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(zklock::Writes::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The writes, in order.
    ///
    /// ```
    /// let w = zklock::Writes::new().delete("/a");
    /// assert_eq!(w.ops()[0].path(), "/a");
    /// ```
    pub fn ops(&self) -> &[MultiOp] {
        &self.ops
    }

    /// The writes as the core's [`MultiOp`]s.
    ///
    /// ```
    /// let ops = zklock::Writes::new().delete("/a").into_ops();
    /// assert_eq!(ops.len(), 1);
    /// ```
    pub fn into_ops(self) -> Vec<MultiOp> {
        self.ops
    }
}

impl From<Vec<MultiOp>> for Writes {
    fn from(ops: Vec<MultiOp>) -> Self {
        Writes { ops }
    }
}

impl FromIterator<MultiOp> for Writes {
    fn from_iter<I: IntoIterator<Item = MultiOp>>(iter: I) -> Self {
        Writes {
            ops: iter.into_iter().collect(),
        }
    }
}
