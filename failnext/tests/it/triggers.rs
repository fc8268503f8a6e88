//! Placeholder: tests for this area are being written.
