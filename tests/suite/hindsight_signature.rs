//! Integration tests: hindsight_signature (being written).
