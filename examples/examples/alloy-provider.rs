//! Placeholder: the alloy example is being written.
fn main() {}
