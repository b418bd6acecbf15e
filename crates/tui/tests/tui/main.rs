//! The cockpit's screens drawn on ratatui's test backend: insta snapshots of each screen at
//! 80×24, wide and tiny, and the guarantee that no control character of an agent's reaches a
//! cell.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod asking;
mod fixture;
mod screens;
