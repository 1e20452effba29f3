use acl::*;
use consts::*;
use data::*;
use io::ZkIo;
use listeners::ListenerSet;
use mio_extras::channel::Sender as MioSender;
use multi::{MultiError, MultiRequest, MultiResponse, Op, OpResult};
use proto::*;
use std::convert::From;
use std::result;
use std::string::ToString;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;
use watch::{Watcher, ZkWatch};

mod connect_string;

/// Value returned from potentially-error operations.
pub type ZkResult<T> = result::Result<T, ZkError>;

pub struct RawRequest {
    pub opcode: OpCode,
    pub data: ByteBuf,
    pub listener: Option<SyncSender<RawResponse>>,
}

pub struct RawResponse {
    pub header: ReplyHeader,
    pub data: ByteBuf,
}

/// The client interface for interacting with a ZooKeeper cluster.
pub struct ZooKeeper {
    chroot: Option<String>,
    xid: AtomicIsize,
    io: Mutex<MioSender<RawRequest>>,
    listeners: ListenerSet<ZkState>,
    session_timeout_ms: Arc<AtomicU64>,
}

impl ZooKeeper {
    fn zk_thread<F>(name: &str, task: F) -> ZkResult<thread::JoinHandle<()>>
    where
        F: FnOnce() + Send + 'static,
    {
        thread::Builder::new()
            .name(name.to_owned())
            .spawn(task)
            .map_err(|_| ZkError::SystemError)
    }

    /// Connect to a ZooKeeper cluster.
    ///
    /// - `connect_string`: comma separated host:port pairs, each corresponding to a zk server,
    ///   e.g. `"127.0.0.1:3000,127.0.0.1:3001,127.0.0.1:3002"` If the optional chroot suffix is
    ///   used the example would look like: `"127.0.0.1:3000,127.0.0.1:3001,127.0.0.1:3002/app/a"`
    ///   where the client would be rooted at `"/app/a"` and all paths would be relative to this
    ///   root -- ie getting/setting/etc...`"/foo/bar"` would result in operations being run on
    ///   `"/app/a/foo/bar"` (from the server perspective).
    /// - `timeout`: session timeout -- how long should a client go without receiving communication
    ///   from a server before considering it connection loss?
    /// - `watcher`: a watcher object to be notified of connection state changes.
    pub fn connect<W>(connect_string: &str, timeout: Duration, watcher: W) -> ZkResult<ZooKeeper>
    where
        W: Watcher + 'static,
    {
        let (addrs, chroot) = try!(Self::parse_connect_string(connect_string));

        debug!("Initiating connection to {}", connect_string);

        let (watch, watch_sender) = ZkWatch::new(watcher, chroot.clone());
        let listeners = ListenerSet::<ZkState>::new();
        let listeners1 = listeners.clone();
        let io = ZkIo::new(addrs.clone(), timeout, watch_sender, listeners1);
        let sender = io.sender();
        let session_timeout_ms = io.session_timeout_ms();

        try!(Self::zk_thread("event", move || watch.run().unwrap()));
        try!(Self::zk_thread("io", move || io.run().unwrap()));

        trace!("Returning a ZooKeeper");

        Ok(ZooKeeper {
            chroot: chroot,
            xid: AtomicIsize::new(1),
            io: Mutex::new(sender),
            listeners: listeners,
            session_timeout_ms: session_timeout_ms,
        })
    }

    fn xid(&self) -> i32 {
        self.xid.fetch_add(1, Ordering::Relaxed) as i32
    }

    fn request<Req: WriteTo, Resp: ReadFrom>(
        &self,
        opcode: OpCode,
        xid: i32,
        req: Req,
    ) -> ZkResult<Resp> {
        trace!("request opcode={:?} xid={:?}", opcode, xid);
        let rh = RequestHeader {
            xid: xid,
            opcode: opcode,
        };
        let buf = try!(to_len_prefixed_buf(rh, req).map_err(|_| ZkError::MarshallingError));

        let (resp_tx, resp_rx) = sync_channel(0);
        let request = RawRequest {
            opcode: opcode,
            data: buf,
            listener: Some(resp_tx),
        };

        self.io
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(request)
            .map_err(|err| {
                warn!("error sending request: {:?}", err);
                ZkError::ConnectionLoss
            })?;

        let mut response = try!(resp_rx.recv().map_err(|err| {
            warn!("error receiving response: {:?}", err);
            ZkError::ConnectionLoss
        }));

        match response.header.err {
            0 => Ok(try!(
                ReadFrom::read_from(&mut response.data).map_err(|_| ZkError::MarshallingError)
            )),
            e => Err(ZkError::from(e)),
        }
    }

    fn path(&self, path: &str) -> ZkResult<String> {
        match self.chroot {
            Some(ref chroot) => match path {
                "/" => Ok(chroot.clone()),
                path => Ok(chroot.clone() + try!(Self::validate_path(path))),
            },
            None => Ok(try!(Self::validate_path(path)).to_owned()),
        }
    }

    fn cut_chroot(&self, path: String) -> String {
        if let Some(ref chroot) = self.chroot {
            path[chroot.len()..].to_owned()
        } else {
            path
        }
    }

    /// Add the specified `scheme`:`auth` information to this connection.
    ///
    /// See `Acl` for more information.
    pub fn add_auth<S: ToString>(&self, scheme: S, auth: Vec<u8>) -> ZkResult<()> {
        trace!("ZooKeeper::add_auth");
        let req = AuthRequest {
            typ: 0,
            scheme: scheme.to_string(),
            auth: auth,
        };

        let _: EmptyResponse = try!(self.request(OpCode::Auth, -4, req));

        Ok(())
    }

    /// Create a node with the given `path`. The node data will be the given `data`, and node ACL
    /// will be the given `acl`. The `mode` argument specifies the behavior of the created node (see
    /// `CreateMode` for more information).
    ///
    /// This operation, if successful, will trigger all the watches left on the node of the given
    /// path by `exists` and `get_data` API calls, and the watches left on the parent node by
    /// `get_children` API calls.
    ///
    /// # Errors
    /// If a node with the same actual path already exists in the ZooKeeper, the result will have
    /// `Err(ZkError::NodeExists)`. Note that since a different actual path is used for each
    /// invocation of creating sequential node with the same path argument, the call should never
    /// error in this manner.
    ///
    /// If the parent node does not exist in the ZooKeeper, `Err(ZkError::NoNode)` will be returned.
    ///
    /// An ephemeral node cannot have children. If the parent node of the given path is ephemeral,
    /// `Err(ZkError::NoChildrenForEphemerals)` will be returned.
    ///
    /// If the `acl` is invalid or empty, `Err(ZkError::InvalidACL)` is returned.
    ///
    /// The maximum allowable size of the data array is 1 MiB (1,048,576 bytes). Arrays larger than
    /// this will return `Err(ZkError::BadArguments)`.
    pub fn create(
        &self,
        path: &str,
        data: Vec<u8>,
        acl: Vec<Acl>,
        mode: CreateMode,
    ) -> ZkResult<String> {
        trace!("ZooKeeper::create");
        let req = CreateRequest {
            path: self.path(path)?,
            data: data,
            acl: acl,
            flags: mode as i32,
        };

        let response: CreateResponse = try!(self.request(OpCode::Create, self.xid(), req));

        Ok(self.cut_chroot(response.path))
    }

    /// Delete the node with the given `path`. The call will succeed if such a node exists, and the
    /// given `version` matches the node's version (if the given version is `None`, it matches any
    /// node's versions).
    ///
    /// This operation, if successful, will trigger all the watches on the node of the given path
    /// left by `exists` API calls, watches left by `get_data` API calls, and the watches on the
    /// parent node left by `get_children` API calls.
    ///
    /// # Errors
    /// If the nodes does not exist, `Err(ZkError::NoNode)` will be returned.
    ///
    /// If the given `version` does not match the node's version, `Err(ZkError::BadVersion)` will be
    /// returned.
    ///
    /// If the node has children, `Err(ZkError::NotEmpty)` will be returned.
    pub fn delete(&self, path: &str, version: Option<i32>) -> ZkResult<()> {
        trace!("ZooKeeper::delete");
        let req = DeleteRequest {
            path: try!(self.path(path)),
            version: version.unwrap_or(-1),
        };

        let _: EmptyResponse = try!(self.request(OpCode::Delete, self.xid(), req));

        Ok(())
    }

    /// Return the `Stat` of the node of the given `path` or `None` if no such node exists.
    ///
    /// If the `watch` is `true` and the call is successful (no error is returned), a watch will be
    /// left on the node with the given path. The watch will be triggered by a successful operation
    /// that creates/delete the node or sets the data on the node.
    pub fn exists(&self, path: &str, watch: bool) -> ZkResult<Option<Stat>> {
        trace!("ZooKeeper::exists");
        let req = ExistsRequest {
            path: try!(self.path(path)),
            watch: watch,
        };

        match self.request::<ExistsRequest, ExistsResponse>(OpCode::Exists, self.xid(), req) {
            Ok(response) => Ok(Some(response.stat)),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Flush the channel between the server this client is connected to and the
    /// leader (ZooKeeper's `sync`): return once that server has applied every update
    /// the leader had committed when the request reached it. The request goes
    /// through the leader without a transaction. Return the path.
    pub fn sync(&self, path: &str) -> ZkResult<String> {
        trace!("ZooKeeper::sync");
        // The request and the response are a path alone, as getAcl's request and
        // create's response.
        let req = GetAclRequest {
            path: try!(self.path(path)),
        };

        let response: CreateResponse = try!(self.request(OpCode::Sync, self.xid(), req));

        Ok(self.cut_chroot(response.path))
    }

    /// Return the ACL and `Stat` of the node of the given path.
    ///
    /// # Errors
    /// If no node with the given path exists, `Err(ZkError::NoNode)` will be returned.
    pub fn get_acl(&self, path: &str) -> ZkResult<(Vec<Acl>, Stat)> {
        trace!("ZooKeeper::get_acl");
        let req = GetAclRequest {
            path: try!(self.path(path)),
        };

        let response: GetAclResponse = try!(self.request(OpCode::GetAcl, self.xid(), req));

        Ok(response.acl_stat)
    }

    /// Return the list of the children of the node of the given `path`. The returned values are not
    /// prefixed with the provided `path`; i.e. if the database contains `/path/a` and `/path/b`,
    /// the result of `get_children` for `"/path"` will be `["a", "b"]`.
    ///
    /// If the `watch` is `true` and the call is successful (no error is returned), a watch will be
    /// left on the node with the given path. The watch will be triggered by a successful operation
    /// that deletes the node of the given path or creates/delete a child under the node.
    ///
    /// The list of children returned is not sorted and no guarantee is provided as to its natural
    /// or lexical order.
    ///
    /// # Errors
    /// If no node with the given path exists, `Err(ZkError::NoNode)` will be returned.
    pub fn get_children(&self, path: &str, watch: bool) -> ZkResult<Vec<String>> {
        trace!("ZooKeeper::get_children");
        let req = GetChildrenRequest {
            path: try!(self.path(path)),
            watch: watch,
        };

        let response: GetChildrenResponse =
            try!(self.request(OpCode::GetChildren, self.xid(), req));

        Ok(response.children)
    }

    /// Return the data and the `Stat` of the node of the given path.
    ///
    /// If `watch` is `true` and the call is successful (no error is returned), a watch will be left
    /// on the node with the given path. The watch will be triggered by a successful operation that
    /// sets data on the node, or deletes the node.
    ///
    /// # Errors
    /// If no node with the given path exists, `Err(ZkError::NoNode)` will be returned.
    pub fn get_data(&self, path: &str, watch: bool) -> ZkResult<(Vec<u8>, Stat)> {
        trace!("ZooKeeper::get_data");
        let req = GetDataRequest {
            path: try!(self.path(path)),
            watch: watch,
        };

        let response: GetDataResponse = try!(self.request(OpCode::GetData, self.xid(), req));

        Ok(response.data_stat)
    }

    /// Set the data for the node of the given `path` if such a node exists and the given version
    /// matches the version of the node (if the given version is `None`, it matches any node's
    /// versions). Return the `Stat` of the node.
    ///
    /// This operation, if successful, will trigger all the watches on the node of the given `path`
    /// left by `get_data` calls.
    ///
    /// # Errors
    /// If no node with the given `path` exists, `Err(ZkError::NoNode)` will be returned.
    ///
    /// If the given version does not match the node's version, `Err(ZkError::BadVersion)` will be
    /// returned.
    ///
    /// The maximum allowable size of the `data` array is 1 MiB (1,048,576 bytes). Arrays larger
    /// than this will return `Err(ZkError::BadArguments)`.
    pub fn set_data(&self, path: &str, data: Vec<u8>, version: Option<i32>) -> ZkResult<Stat> {
        trace!("ZooKeeper::set_data");
        let req = SetDataRequest {
            path: try!(self.path(path)),
            data: data,
            version: version.unwrap_or(-1),
        };

        let response: SetDataResponse = try!(self.request(OpCode::SetData, self.xid(), req));

        Ok(response.stat)
    }

    /// Run `ops` as one transaction (ZooKeeper's `multi`, 3.4+): the server applies
    /// all of them, in order, or none. Return their results, in the same order.
    ///
    /// # Errors
    /// If an operation fails (as it would on its own, e.g. a `Check` of a missing
    /// node: `NoNode`), nothing is applied and `Err(MultiError::Op)` names the first
    /// one that failed; a failure of the request itself is `Err(MultiError::Request)`.
    pub fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, MultiError> {
        trace!("ZooKeeper::multi");
        let ops = ops
            .into_iter()
            .map(|op| op.map_path(|path| self.path(path)));
        let req = MultiRequest(ops.collect::<ZkResult<_>>().map_err(MultiError::Request)?);

        let response: MultiResponse = try!(self
            .request(OpCode::Multi, self.xid(), req)
            .map_err(MultiError::Request));

        let mut results = try!(response.0);
        for result in results.iter_mut() {
            if let OpResult::Create(ref mut path) = *result {
                *path = self.cut_chroot(path.clone());
            }
        }
        Ok(results)
    }

    /// Remove watches of a given type for a path.
    pub fn remove_watches(&self, path: &str, watcher_type: WatcherType) -> ZkResult<()> {
        let req = RemoveWatchesRequest {
            path: try!(self.path(path)),
            watcher_type: watcher_type,
        };
        try!(self.request::<_, ()>(OpCode::RemoveWatches, self.xid(), req));
        Ok(())
    }

    /// Adds a state change `Listener`, which will be notified of changes to the client's `ZkState`.
    pub fn add_listener<Listener: Fn(ZkState) + Send + 'static>(&self, listener: Listener) {
        trace!("ZooKeeper::add_listener");
        self.listeners.subscribe(listener)
    }

    /// The session timeout: the one the server granted when this client last
    /// connected (it fits the timeout asked for into its `minSessionTimeout` ..=
    /// `maxSessionTimeout`, and keeps it for the session's life; a new session after
    /// an expiry is granted its own), or the one asked for in `connect` before the
    /// first connection. Read it once the state listener reports `Connected`: it is
    /// updated before the listeners hear of the connection.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.session_timeout_ms.load(Ordering::Acquire))
    }

    /// Close this client object. Once the client is closed, its session becomes invalid. All the
    /// ephemeral nodes in the ZooKeeper server associated with the session will be removed. The
    /// watches left on those nodes (and on their parents) will be triggered.
    pub fn close(&self) -> ZkResult<()> {
        trace!("ZooKeeper::close");
        let _: EmptyResponse = try!(self.request(OpCode::CloseSession, 0, EmptyRequest));

        Ok(())
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        if let Err(err) = self.close() {
            error!("error closing zookeeper connection in drop: {:?}", err);
        }
    }
}
