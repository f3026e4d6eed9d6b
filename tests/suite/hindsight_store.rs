//! Integration tests: hindsight_store (being written).
