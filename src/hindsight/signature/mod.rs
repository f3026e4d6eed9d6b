//! signature (being written).
