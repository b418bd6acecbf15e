//! Test support: mock model servers, loopback-only network namespaces, agent CLI discovery.

pub mod mock_anthropic;
