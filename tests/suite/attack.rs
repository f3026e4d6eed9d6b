//! Integration tests: attack (see the module's owner for scope).
