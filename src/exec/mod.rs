//! exec (being written).
