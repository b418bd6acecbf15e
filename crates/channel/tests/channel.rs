//! Integration tests of nucleic-channel: the published Noise vectors, the handshakes and
//! transport under attack, and interoperability with the browser's implementation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod channel {
    mod attacks;
    mod interop;
    mod spec_vectors;
    mod streams;
    mod support;
    mod vectors;
}
