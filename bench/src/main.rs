//! Placeholder for the benchmark binary.
fn main() {}
