//! Extended ZooKeeper recipes from [Apache Curator](http://curator.apache.org/).
pub mod cache;
pub mod leader;
pub mod queue;
