//! exit (being written).
