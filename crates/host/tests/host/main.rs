//! The host with the simulated agent (started through `nucleic-entry-points`) and real git:
//! sessions, worktree pools, disk, modes, reviews, pushes, writers, idle agents, a hostile
//! repository, a churn of sessions, and MCP principals held to their grants.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod churn;
mod disk;
mod host_setup;
mod hostile_git;
mod idle;
mod mcp_projects;
mod mcp_scopes;
mod modes;
mod outside;
mod parts;
mod pool;
mod push;
mod replies;
mod review;
mod sessions;
mod support;
mod writers;
