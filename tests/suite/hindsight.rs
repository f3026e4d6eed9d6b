//! Integration tests: hindsight (being written).
