//! Test support: mock model servers, loopback-only network namespaces, agent CLI discovery.

pub mod agents;
pub mod isolation;
pub mod mock_anthropic;
pub mod mock_github;
mod mock_http;
pub mod mock_openai;
pub mod mock_push;
pub mod standalone;
