//! All integration tests, compiled as one binary (see `suite/`); shared helpers in `common/`.

mod common;
mod suite;
