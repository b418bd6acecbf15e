//! Sessions: starting, acting on, writing to and reading the files of a session.

pub(crate) mod attachments;
pub(crate) mod control;
pub(crate) mod files;
pub(crate) mod follower;
pub(crate) mod in_place;
pub(crate) mod in_place_lock;
pub(crate) mod names;
pub(crate) mod outside;
pub(crate) mod retained;
pub(crate) mod start;
pub(crate) mod start_refusals;
pub(crate) mod start_trace;
pub(crate) mod writers;
pub(crate) mod writing;
