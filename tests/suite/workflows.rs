//! Integration tests: workflows (see the module's owner for scope).
