//! Conversions between protocol types and SQLite values: wire names, millis, UTF-8 paths.

use std::path::Path;

use rusqlite::types::Type;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{CatalogError, Result};

/// The serde wire name of a unit enum variant (`completed`, `allowEdited`, `claudeCode`, …).
pub(crate) fn wire_name<T: Serialize>(what: &'static str, value: &T) -> Result<String> {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => Ok(s),
        Ok(other) => Err(CatalogError::Json {
            what,
            source: serde::ser::Error::custom(format!("expected a string, got {other}")),
        }),
        Err(source) => Err(CatalogError::Json { what, source }),
    }
}

/// Parses a wire name read from column `idx` back into its enum.
pub(crate) fn from_wire<T: DeserializeOwned>(idx: usize, name: String) -> rusqlite::Result<T> {
    serde_json::from_value(Value::String(name))
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

/// A non-negative SQLite integer from column `idx` as `u64`.
pub(crate) fn to_u64(idx: usize, value: i64) -> rusqlite::Result<u64> {
    u64::try_from(value).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(idx, value))
}

/// The current time in unix milliseconds.
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `path` as UTF-8 text (paths are stored as TEXT).
pub(crate) fn path_str(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| CatalogError::NonUtf8Path { path: path.to_path_buf() })
}
