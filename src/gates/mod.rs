//! gates (being written).
