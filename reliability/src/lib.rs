//! Reliability and security proof for failnext and failnext-blocklag.
