//! The signature id: a fixed 64-bit FNV-1a hash of kind and template, as 16 lowercase hex digits.
//!
//! The algorithm and its constants are part of the store's on-disk format: never change them, and
//! never use std's `DefaultHasher` (its output may change between Rust versions).

use crate::SignatureKind;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The stable id of a signature: FNV-1a 64 over `"<kind>\n<template>"`, in 16 lowercase hex.
pub fn signature_id(kind: SignatureKind, template: &str) -> String {
    fnv_hex(
        kind_name(kind)
            .bytes()
            .chain(std::iter::once(b'\n'))
            .chain(template.bytes()),
    )
}

/// FNV-1a 64 over `bytes`, in 16 lowercase hex (family keys use it too).
pub(super) fn fnv_hex(bytes: impl IntoIterator<Item = u8>) -> String {
    let mut hash = FNV_OFFSET;
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    format!("{hash:016x}")
}

/// The fixed name hashed for each kind (the serde name; spelled out so a rename cannot move ids).
pub(super) fn kind_name(kind: SignatureKind) -> &'static str {
    match kind {
        SignatureKind::Compile => "compile",
        SignatureKind::TestFailure => "test_failure",
        SignatureKind::TestError => "test_error",
        SignatureKind::Lint => "lint",
        SignatureKind::Crash => "crash",
        SignatureKind::Timeout => "timeout",
        SignatureKind::Other => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_sixteen_hex_digits_and_fixed() {
        let id = signature_id(SignatureKind::Compile, "error[E0308]: mismatched types");
        assert_eq!(id.len(), 16);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(
            id,
            signature_id(SignatureKind::Lint, "error[E0308]: mismatched types")
        );
    }
}
