//! Shared code for the failnext examples.
