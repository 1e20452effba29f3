//! ZooKeeper's `multi` (OpCode 14, ZooKeeper 3.4+): create, delete, setData and
//! check operations applied as one transaction, all or none. The wire format is
//! jute's `MultiTxnRecord`/`MultiResponse`: each operation or result is preceded
//! by a `MultiHeader` (type, done, err), and a header with `done` ends the list.

use acl::Acl;
use byteorder::{BigEndian, ReadBytesExt, WriteBytesExt};
use consts::{CreateMode, ZkError};
use data::Stat;
use proto::{BufferReader, OpCode, ReadFrom, WriteTo};
use std::error::Error;
use std::fmt;
use std::io::{self, Read, Write};

/// One operation of a [`ZooKeeper::multi`](::ZooKeeper::multi) (the Java client's `Op`).
/// A `version` of `None` matches any version.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Create a node, as [`ZooKeeper::create`](::ZooKeeper::create).
    Create {
        /// The path (for a sequential node, the prefix the server suffixes).
        path: String,
        /// The node's data.
        data: Vec<u8>,
        /// The node's ACL.
        acl: Vec<Acl>,
        /// How the node is created.
        mode: CreateMode,
    },
    /// Delete a node, as [`ZooKeeper::delete`](::ZooKeeper::delete).
    Delete {
        /// The path.
        path: String,
        /// The version it must have.
        version: Option<i32>,
    },
    /// Set a node's data, as [`ZooKeeper::set_data`](::ZooKeeper::set_data).
    SetData {
        /// The path.
        path: String,
        /// The new data.
        data: Vec<u8>,
        /// The version it must have.
        version: Option<i32>,
    },
    /// Check that a node exists (with this version, if given); changes nothing.
    Check {
        /// The path.
        path: String,
        /// The version it must have.
        version: Option<i32>,
    },
}

impl Op {
    /// The operation with its path rewritten by `f` (the client's chroot).
    pub(crate) fn map_path<F>(self, f: F) -> Result<Op, ZkError>
    where
        F: FnOnce(&str) -> Result<String, ZkError>,
    {
        Ok(match self {
            Op::Create {
                path,
                data,
                acl,
                mode,
            } => Op::Create {
                path: f(&path)?,
                data: data,
                acl: acl,
                mode: mode,
            },
            Op::Delete { path, version } => Op::Delete {
                path: f(&path)?,
                version: version,
            },
            Op::SetData {
                path,
                data,
                version,
            } => Op::SetData {
                path: f(&path)?,
                data: data,
                version: version,
            },
            Op::Check { path, version } => Op::Check {
                path: f(&path)?,
                version: version,
            },
        })
    }

    fn opcode(&self) -> OpCode {
        match *self {
            // The Java client sends containers with their own code: the server
            // creates a container only for it.
            Op::Create {
                mode: CreateMode::Container,
                ..
            } => OpCode::CreateContainer,
            Op::Create { .. } => OpCode::Create,
            Op::Delete { .. } => OpCode::Delete,
            Op::SetData { .. } => OpCode::SetData,
            Op::Check { .. } => OpCode::Check,
        }
    }
}

/// The result of one operation of a successful [`ZooKeeper::multi`](::ZooKeeper::multi),
/// in the order of the operations.
#[derive(Debug)]
pub enum OpResult {
    /// The node was created at this path (with the sequence suffix, if sequential).
    Create(String),
    /// The node was deleted.
    Delete,
    /// The data was set; the node's new `Stat`.
    SetData(Stat),
    /// The check passed.
    Check,
}

/// Why a [`ZooKeeper::multi`](::ZooKeeper::multi) failed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MultiError {
    /// The operation at `index` failed with `error`: the server applied none of them.
    Op {
        /// The failing operation's index in the request.
        index: usize,
        /// Its error.
        error: ZkError,
    },
    /// The request as a whole failed, as any call can (`ConnectionLoss`: it may or
    /// may not have been applied, all or nothing).
    Request(ZkError),
}

impl fmt::Display for MultiError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            MultiError::Op { index, error } => write!(f, "multi op {} failed: {}", index, error),
            MultiError::Request(error) => write!(f, "multi failed: {}", error),
        }
    }
}

impl Error for MultiError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match *self {
            MultiError::Op { ref error, .. } | MultiError::Request(ref error) => Some(error),
        }
    }
}

/// `MultiHeader`: the type of the operation (or result) that follows, or the end.
fn write_header(writer: &mut dyn Write, opcode: i32, done: bool) -> io::Result<()> {
    writer.write_i32::<BigEndian>(opcode)?;
    writer.write_u8(done as u8)?;
    writer.write_i32::<BigEndian>(-1)
}

pub(crate) struct MultiRequest(pub Vec<Op>);

impl WriteTo for MultiRequest {
    fn write_to(&self, writer: &mut dyn Write) -> io::Result<()> {
        for op in &self.0 {
            write_header(writer, op.opcode() as i32, false)?;
            match *op {
                Op::Create {
                    ref path,
                    ref data,
                    ref acl,
                    mode,
                } => {
                    path.write_to(writer)?;
                    data.write_to(writer)?;
                    acl.write_to(writer)?;
                    writer.write_i32::<BigEndian>(mode as i32)?;
                }
                Op::SetData {
                    ref path,
                    ref data,
                    version,
                } => {
                    path.write_to(writer)?;
                    data.write_to(writer)?;
                    writer.write_i32::<BigEndian>(version.unwrap_or(-1))?;
                }
                Op::Delete { ref path, version } | Op::Check { ref path, version } => {
                    path.write_to(writer)?;
                    writer.write_i32::<BigEndian>(version.unwrap_or(-1))?;
                }
            }
        }
        write_header(writer, -1, true)
    }
}

/// A multi's response: every operation's result, or the first failure.
pub(crate) struct MultiResponse(pub Result<Vec<OpResult>, MultiError>);

impl ReadFrom for MultiResponse {
    fn read_from<R: Read>(reader: &mut R) -> io::Result<MultiResponse> {
        let mut results = Vec::new();
        let mut failure = None;
        loop {
            let opcode = reader.read_i32::<BigEndian>()?;
            let done = reader.read_u8()? != 0;
            let _err = reader.read_i32::<BigEndian>()?;
            if done {
                break;
            }
            let string = |reader: &mut R| {
                String::from_utf8(reader.read_buffer()?)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
            };
            let index = results.len();
            results.push(match opcode {
                1 => OpResult::Create(string(reader)?),
                // create2, createContainer, createTTL: the path and the node's Stat.
                15 | 19 | 21 => {
                    let path = string(reader)?;
                    Stat::read_from(reader)?;
                    OpResult::Create(path)
                }
                2 => OpResult::Delete,
                5 => OpResult::SetData(Stat::read_from(reader)?),
                13 => OpResult::Check,
                -1 => {
                    // On failure every operation gets an error: 0 for those before
                    // the one that failed (rolled back), RuntimeInconsistency after.
                    let code = reader.read_i32::<BigEndian>()?;
                    if code != 0 && failure.is_none() {
                        failure = Some(MultiError::Op {
                            index: index,
                            error: ZkError::from(code),
                        });
                    }
                    OpResult::Check
                }
                other => {
                    let msg = format!("unexpected op code {} in a multi response", other);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, msg));
                }
            });
        }
        Ok(MultiResponse(match failure {
            Some(failure) => Err(failure),
            None => Ok(results),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn header(out: &mut Vec<u8>, opcode: i32, done: bool, err: i32) {
        out.write_i32::<BigEndian>(opcode).unwrap();
        out.write_u8(done as u8).unwrap();
        out.write_i32::<BigEndian>(err).unwrap();
    }

    fn string(out: &mut Vec<u8>, s: &str) {
        out.write_i32::<BigEndian>(s.len() as i32).unwrap();
        out.extend_from_slice(s.as_bytes());
    }

    fn stat(out: &mut Vec<u8>, version: i32) {
        for field in &[7i64, 8, 9, 10] {
            out.write_i64::<BigEndian>(*field).unwrap(); // czxid, mzxid, ctime, mtime
        }
        for field in &[version, 0, 0] {
            out.write_i32::<BigEndian>(*field).unwrap(); // version, cversion, aversion
        }
        out.write_i64::<BigEndian>(0).unwrap(); // ephemeralOwner
        for field in &[2i32, 0] {
            out.write_i32::<BigEndian>(*field).unwrap(); // dataLength, numChildren
        }
        out.write_i64::<BigEndian>(11).unwrap(); // pzxid
    }

    fn decode(bytes: Vec<u8>) -> Result<Vec<OpResult>, MultiError> {
        MultiResponse::read_from(&mut Cursor::new(bytes)).unwrap().0
    }

    #[test]
    fn encodes_every_op_then_the_end() {
        let request = MultiRequest(vec![
            Op::Check {
                path: "/a".into(),
                version: Some(3),
            },
            Op::Create {
                path: "/a/b".into(),
                data: b"x".to_vec(),
                acl: Acl::open_unsafe().clone(),
                mode: CreateMode::EphemeralSequential,
            },
            Op::Create {
                path: "/c".into(),
                data: vec![],
                acl: vec![],
                mode: CreateMode::Container,
            },
            Op::SetData {
                path: "/d".into(),
                data: b"yz".to_vec(),
                version: None,
            },
            Op::Delete {
                path: "/e".into(),
                version: None,
            },
        ]);
        let mut got = Vec::new();
        request.write_to(&mut got).unwrap();

        let mut want = Vec::new();
        header(&mut want, 13, false, -1);
        string(&mut want, "/a");
        want.write_i32::<BigEndian>(3).unwrap();
        header(&mut want, 1, false, -1);
        string(&mut want, "/a/b");
        string(&mut want, "x");
        want.write_i32::<BigEndian>(1).unwrap(); // one ACL: world:anyone, all
        want.write_u32::<BigEndian>(31).unwrap();
        string(&mut want, "world");
        string(&mut want, "anyone");
        want.write_i32::<BigEndian>(3).unwrap(); // EphemeralSequential
        header(&mut want, 19, false, -1); // createContainer
        string(&mut want, "/c");
        string(&mut want, "");
        want.write_i32::<BigEndian>(0).unwrap(); // no ACL
        want.write_i32::<BigEndian>(4).unwrap(); // Container
        header(&mut want, 5, false, -1);
        string(&mut want, "/d");
        string(&mut want, "yz");
        want.write_i32::<BigEndian>(-1).unwrap();
        header(&mut want, 2, false, -1);
        string(&mut want, "/e");
        want.write_i32::<BigEndian>(-1).unwrap();
        header(&mut want, -1, true, -1);
        assert_eq!(got, want);
    }

    #[test]
    fn decodes_every_result() {
        let mut bytes = Vec::new();
        header(&mut bytes, 13, false, 0);
        header(&mut bytes, 1, false, 0);
        string(&mut bytes, "/a/b0000000001");
        header(&mut bytes, 15, false, 0);
        string(&mut bytes, "/c");
        stat(&mut bytes, 0);
        header(&mut bytes, 5, false, 0);
        stat(&mut bytes, 4);
        header(&mut bytes, 2, false, 0);
        header(&mut bytes, -1, true, -1);
        match &decode(bytes).unwrap()[..] {
            [OpResult::Check, OpResult::Create(a), OpResult::Create(c), OpResult::SetData(stat), OpResult::Delete] =>
            {
                assert_eq!((a.as_str(), c.as_str()), ("/a/b0000000001", "/c"));
                assert_eq!((stat.czxid, stat.version, stat.pzxid), (7, 4, 11));
            }
            other => panic!("{:?}", other),
        }
    }

    #[test]
    fn a_failure_names_the_first_failing_op() {
        let mut bytes = Vec::new();
        for code in &[0, -101, -2] {
            header(&mut bytes, -1, false, *code);
            bytes.write_i32::<BigEndian>(*code).unwrap();
        }
        header(&mut bytes, -1, true, -1);
        let err = decode(bytes).unwrap_err();
        assert_eq!(
            err,
            MultiError::Op {
                index: 1,
                error: ZkError::NoNode
            }
        );
        assert_eq!(
            err.to_string(),
            "multi op 1 failed: Zookeeper Error: NoNode"
        );
    }

    #[test]
    fn an_unknown_result_is_a_decoding_error() {
        let mut bytes = Vec::new();
        header(&mut bytes, 4, false, 0);
        assert!(MultiResponse::read_from(&mut Cursor::new(bytes)).is_err());
    }

    #[test]
    fn paths_are_rewritten_with_the_rest_kept() {
        let op = Op::SetData {
            path: "/a".into(),
            data: b"x".to_vec(),
            version: Some(2),
        };
        let rooted = op.map_path(|p| Ok(format!("/root{}", p))).unwrap();
        assert_eq!(
            rooted,
            Op::SetData {
                path: "/root/a".into(),
                data: b"x".to_vec(),
                version: Some(2),
            }
        );
        let refused = Op::Check {
            path: "a".into(),
            version: None,
        };
        assert_eq!(
            refused.map_path(|_| Err(ZkError::BadArguments)),
            Err(ZkError::BadArguments)
        );
    }
}
