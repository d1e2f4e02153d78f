//! placeholder until the query crate lands
