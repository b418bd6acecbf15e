//! Integration tests of the policy engine: one binary, one module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attacks;
mod bad_input;
mod bash_diff;
mod codex;
mod compound;
mod corpus;
mod invariants;
mod modes;
mod rules;
mod settings;
mod support;
